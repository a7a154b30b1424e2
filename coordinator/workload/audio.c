/* workload.audio: one transcription description per clip (chatload/audio.h), which the agent
 * renders into the multipart form it uploads: synthetic clips by length and seed (a few bytes
 * each, whatever the audio's length), or a folder's WAV files carried in base64. */
#include "coordinator/workload/internal.h"

#include "chatload/audio.h"
#include "chatload/rng.h"
#include "chatload/wire.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Renders one description: model first (cl_workload_plan_set_model swaps it), then the
 * audio (wav, or audio_ms and seed), then the form's own fields. */
static int push(struct render_ctx *c, const struct cl_scn_audio *a, json_t *audio,
		uint32_t audio_ms, struct cl_err *err)
{
	json_t *o = json_object();
	int bad = !o || json_object_set_new(o, "model", json_string(c->model)) ||
		  json_object_update(o, audio) ||
		  (a->language && json_object_set_new(o, "language", json_string(a->language))) ||
		  json_object_set_new(o, "response_format", json_string("json")) ||
		  json_object_set_new(o, "stream", json_boolean(a->stream));
	json_decref(audio);
	char *text = bad ? NULL : json_dumps(o, CL_BODY_JSON_DUMP_FLAGS);
	json_decref(o);
	if (!text)
		return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
	return cli_workload_push_raw(c, text, audio_ms, err);
}

static int synthetic(struct render_ctx *c, const struct cl_scn_audio *a, uint64_t seed,
		     struct cl_err *err)
{
	uint64_t st = seed ^ 0x7472616e73637269ULL;
	int rc = 0;
	for (uint32_t i = 0; i < a->count && !rc; i++) {
		double s = a->seconds_mean;
		if (a->seconds_stddev > 0)
			s += a->seconds_stddev * cl_splitmix_normal(&st);
		if (s < a->seconds_min)
			s = a->seconds_min;
		if (s > a->seconds_max)
			s = a->seconds_max;
		uint32_t ms = (uint32_t)lround(s * 1000.0);
		if (ms == 0)
			ms = 1;
		uint64_t clip_seed = cl_splitmix64(&st) & (uint64_t)INT64_MAX;
		json_t *audio = json_pack("{s:I,s:I}", "audio_ms", (json_int_t)ms, "seed",
					  (json_int_t)clip_seed);
		if (!audio)
			return cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
		rc = push(c, a, audio, ms, err);
		c->stats->records++;
	}
	return rc;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The names of dir's *.wav files (any case), sorted, into *names (n of them). */
static int list_wavs(const char *dir, char ***names, size_t *n, struct cl_err *err)
{
	DIR *d = opendir(dir);
	*names = NULL;
	*n = 0;
	if (!d)
		return cl_err_set(err, CL_EIO, "workload.audio.dir: cannot open '%s': %s", dir,
				  strerror(errno));
	size_t cap = 0;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcasecmp(e->d_name + l - 4, ".wav") != 0 || e->d_name[0] == '.')
			continue;
		if (*n == CL_SCN_MAX_AUDIO_CLIPS) {
			rc = cl_err_set(err, CL_ETOOBIG,
					"workload.audio.dir: '%s' holds more than %u "
					".wav files",
					dir, CL_SCN_MAX_AUDIO_CLIPS);
			break;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			char **p = realloc(*names, cap * sizeof(*p));
			if (!p) {
				rc = CL_ENOMEM;
				break;
			}
			*names = p;
		}
		if (!((*names)[*n] = strdup(e->d_name))) {
			rc = CL_ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (rc == CL_ENOMEM)
		cl_err_set(err, rc, "out of memory listing workload.audio.dir");
	if (!rc && !*n)
		rc = cl_err_set(err, CL_EINVAL, "workload.audio.dir: '%s' holds no .wav file", dir);
	if (!rc)
		qsort(*names, *n, sizeof(**names), by_name);
	return rc;
}

static int from_dir(struct render_ctx *c, const struct cl_scn_audio *a, struct cl_err *err)
{
	char **names;
	size_t n;
	int rc = list_wavs(a->dir, &names, &n, err);
	struct cl_buf file = { .max = CL_AUDIO_MAX_BYTES }, text = { 0 };
	for (size_t i = 0; i < n && !rc; i++) {
		char *path = NULL;
		if (asprintf(&path, "%s/%s", a->dir, names[i]) < 0) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory reading workload.audio.dir");
			break;
		}
		cl_buf_reset(&file);
		cl_buf_reset(&text);
		rc = cl_buf_read_file(&file, path);
		uint64_t ms = 0;
		const char *why = NULL;
		if (rc)
			cl_err_set(err, rc, "workload.audio.dir: cannot read '%s': %s", path,
				   rc == CL_ETOOBIG ? "larger than 256 MiB" : strerror(errno));
		else if (cl_audio_wav_ms(file.data, file.len, &ms, &why) != 0)
			rc = cl_err_set(err, CL_EPARSE, "workload.audio.dir: '%s': %s", path, why);
		else if (ms == 0 || ms > CL_AUDIO_MAX_MS)
			rc = cl_err_set(err, CL_EINVAL,
					"workload.audio.dir: '%s' lasts %llu ms (1 ms to 1 h)",
					path, (unsigned long long)ms);
		else if (cl_audio_base64_encode(file.data, file.len, &text) != 0)
			rc = cl_err_set(err, CL_ENOMEM, "out of memory reading '%s'", path);
		else if (text.len + 512 > CL_WIRE_MAX_BODY)
			/* its base64 travels to the agents as one body */
			rc = cl_err_set(
			    err, CL_ETOOBIG,
			    "workload.audio.dir: '%s' is %zu bytes, more than the %u MiB "
			    "one request body carries to the agents (in base64)",
			    path, file.len, (CL_WIRE_MAX_BODY / 4 * 3) >> 20);
		free(path);
		if (rc)
			break;
		json_t *audio =
		    json_pack("{s:s%,s:s}", "wav", text.data, text.len, "file", names[i]);
		if (!audio) {
			rc = cl_err_set(err, CL_ENOMEM, "out of memory rendering request bodies");
			break;
		}
		rc = push(c, a, audio, (uint32_t)ms, err);
		c->stats->records++;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	cl_buf_free(&file);
	cl_buf_free(&text);
	return rc;
}

int cli_workload_audio(struct render_ctx *c, const struct cl_scn_workload *w, struct cl_err *err)
{
	if (c->sink)
		return cl_err_set(err, CL_EINVAL, "a generate job does not upload audio");
	return w->audio.dir ? from_dir(c, &w->audio, err) : synthetic(c, &w->audio, w->seed, err);
}
