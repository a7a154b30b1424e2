/* workload.audio (docs/scenario.md, "Audio"): the clips transcription requests upload, made
 * from the seed ({ seconds, count }) or read from a folder of WAV files ({ dir }). */
#include "internal.h"

#include "chatload/audio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define MAX_SECONDS ((double)CL_AUDIO_MAX_MS / 1000.0)

/* "seconds: 5" (every clip 5 s), or { mean, stddev, min, max } in seconds. */
static void conv_seconds(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_audio *a = obj;
	if (v && v->kind == YN_SCALAR && !cli_ynode_is_null(v)) {
		cli_scn_get_double(c, v, 0.05, MAX_SECONDS, &a->seconds_mean);
		return;
	}
	static const struct scn_field f[] = {
		SCN_DRANGE("mean", struct cl_scn_audio, seconds_mean, 0.05, MAX_SECONDS),
		SCN_DRANGE("stddev", struct cl_scn_audio, seconds_stddev, 0, MAX_SECONDS),
		SCN_DRANGE("min", struct cl_scn_audio, seconds_min, 0.05, MAX_SECONDS),
		SCN_DRANGE("max", struct cl_scn_audio, seconds_max, 0.05, MAX_SECONDS),
	};
	const struct ynode *seen[N(f)] = { 0 };
	cli_scn_fields(c, v, f, N(f), a, seen, NULL);
	if (!seen[0])
		cli_scn_error(c, v, "%s needs a mean (e.g. { mean: 5, stddev: 2 })",
			      cli_scn_path(c));
	else if (seen[2] && seen[3] && a->seconds_min > a->seconds_max)
		cli_scn_error(c, seen[3], "%s.max must not be below %s.min", cli_scn_path(c),
			      cli_scn_path(c));
	else if (seen[3] && a->seconds_mean > a->seconds_max)
		cli_scn_error(c, seen[3], "%s.max must not be below the mean", cli_scn_path(c));
	else if (seen[2] && a->seconds_mean < a->seconds_min)
		cli_scn_error(c, seen[2], "%s.min must not be above the mean", cli_scn_path(c));
}

enum audio_field { AF_SECONDS, AF_COUNT, AF_DIR, AF_LANGUAGE, AF_STREAM, AF__COUNT };

void cli_scn_conv_audio(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const struct scn_field f[] = {
		[AF_SECONDS] =
		    SCN_CUSTOM_AT("seconds", struct cl_scn_audio, seconds_mean, conv_seconds),
		[AF_COUNT] = SCN_RANGE("count", SCN_F_U32, struct cl_scn_audio, count, 1,
				       CL_SCN_MAX_AUDIO_CLIPS),
		[AF_DIR] = SCN_FIELD("dir", SCN_F_NESTR, struct cl_scn_audio, dir),
		[AF_LANGUAGE] = SCN_FIELD("language", SCN_F_NESTR, struct cl_scn_audio, language),
		[AF_STREAM] = SCN_FIELD("stream", SCN_F_BOOL, struct cl_scn_audio, stream),
	};
	_Static_assert(N(f) == AF__COUNT, "one field per index");
	struct cl_scn_audio *a = obj;
	const struct ynode *seen[AF__COUNT] = { 0 };
	char got[96];
	if (!v || v->kind != YN_MAP) {
		cli_scn_error(c, v,
			      "%s must be a mapping such as { seconds: 5, count: 16 } or { dir: "
			      "clips/ }, got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	/* The struct's offset of seconds_mean is its start: conv_seconds gets the whole. */
	_Static_assert(offsetof(struct cl_scn_audio, seconds_mean) == 0, "seconds at the start");
	cli_scn_fields(c, v, f, N(f), a, seen, NULL);
	if (seen[AF_DIR] && (seen[AF_SECONDS] || seen[AF_COUNT])) {
		cli_scn_error(c, seen[AF_SECONDS] ? seen[AF_SECONDS] : seen[AF_COUNT],
			      "%s: dir and seconds/count are exclusive (files from a folder, or "
			      "clips made from the seed)",
			      cli_scn_path(c));
		return;
	}
	if (!seen[AF_DIR] && !seen[AF_SECONDS]) {
		cli_scn_error(c, v, "%s needs seconds (e.g. { seconds: 5 }) or dir",
			      cli_scn_path(c));
		return;
	}
	if (a->dir) {
		if (a->dir[0] != '/' && c->dir[0]) {
			char *p = NULL;
			if (asprintf(&p, "%s/%s", c->dir, a->dir) < 0) {
				c->oom = true;
				return;
			}
			free(a->dir);
			a->dir = p;
		}
		struct stat st;
		if (stat(a->dir, &st) != 0)
			cli_scn_error(c, seen[AF_DIR], "%s.dir: cannot open '%s': %s",
				      cli_scn_path(c), a->dir, strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			cli_scn_error(c, seen[AF_DIR], "%s.dir: '%s' is not a directory",
				      cli_scn_path(c), a->dir);
	}
	if (!a->dir) {
		/* A normal spread is cut at 4 stddev unless bounds say otherwise. */
		if (!a->seconds_min)
			a->seconds_min = a->seconds_mean - 4 * a->seconds_stddev;
		if (a->seconds_min < 0.05)
			a->seconds_min = 0.05;
		if (!a->seconds_max)
			a->seconds_max = a->seconds_mean + 4 * a->seconds_stddev;
		if (a->seconds_max > MAX_SECONDS)
			a->seconds_max = MAX_SECONDS;
	}
}
