/* A run's results directory: output.dir as given, or <parent>/<name>-<UTC time>/ made unique,
 * with <parent>/latest pointed at it. */
#include "coordinator/results/results.h"
#include "coordinator/results/internal.h"

#include "chatload/clock.h"
#include "chatload/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file-name-safe version of the scenario name. */
static void safe_name(const char *name, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = name && *name ? name : "run"; *p && o + 1 < n && o < 64; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
		out[o++] = ok ? c : '_';
	}
	out[o] = '\0';
	if (out[0] == '.' || out[0] == '\0')
		out[0] = '_';
}

/* Points parent/latest at the run's directory (best effort: a real `latest` directory or a
 * read-only parent just leaves it alone). */
static void update_latest(const char *parent, const char *run_dir)
{
	char tmp[4096], link[4096];
	const char *base = strrchr(run_dir, '/');
	base = base ? base + 1 : run_dir;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.latest.tmp.%ld", parent, (long)getpid()) >=
		sizeof(tmp) ||
	    (size_t)snprintf(link, sizeof(link), "%s/latest", parent) >= sizeof(link))
		return;
	unlink(tmp);
	if (symlink(base, tmp) != 0)
		return;
	struct stat st;
	if ((lstat(link, &st) == 0 && !S_ISLNK(st.st_mode)) || rename(tmp, link) != 0) {
		unlink(tmp);
		CL_DEBUG("cannot update '%s'", link);
	}
}

int cl_results_make_dir(const char *out_dir, const char *parent, const char *name, int64_t wall_us,
			char **dir, struct cl_err *err)
{
	*dir = NULL;
	if (out_dir) {
		int rc = cli_rj_mkdirs(out_dir, err);
		if (rc != 0)
			return rc;
		*dir = strdup(out_dir);
		return *dir ? 0 : cl_err_set(err, CL_ENOMEM, "out of memory");
	}
	if (!parent)
		parent = "results";
	int rc = cli_rj_mkdirs(parent, err);
	if (rc != 0)
		return rc;
	char safe[80], stamp[32], path[4096];
	safe_name(name, safe, sizeof(safe));
	cl_wall_stamp(wall_us, stamp, sizeof(stamp));
	for (int n = 1; n < 1000; n++) {
		size_t len = strlen(parent);
		while (len > 1 && parent[len - 1] == '/')
			len--;
		int w = n == 1 ? snprintf(path, sizeof(path), "%.*s/%s-%s", (int)len, parent, safe,
					  stamp)
			       : snprintf(path, sizeof(path), "%.*s/%s-%s-%d", (int)len, parent,
					  safe, stamp, n);
		if (w < 0 || (size_t)w >= sizeof(path))
			return cl_err_set(err, CL_EINVAL, "results directory name too long in '%s'",
					  parent);
		if (mkdir(path, 0755) == 0) {
			*dir = strdup(path);
			if (!*dir)
				return cl_err_set(err, CL_ENOMEM, "out of memory");
			update_latest(parent, path);
			return 0;
		}
		if (errno != EEXIST)
			return cl_err_set(err, CL_EIO, "cannot create directory '%s': %s", path,
					  strerror(errno));
	}
	return cl_err_set(err, CL_EIO, "cannot create a unique directory under '%s'", parent);
}
