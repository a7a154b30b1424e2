/* The scenario loader's entry points: file or text -> YAML tree -> overrides -> sections, then
 * the checks across sections (target, agents, stage names, SLO and estimate references). */
#include "coordinator/scenario/scenario.h"

#include "chatload/buf.h"
#include "chatload/units.h"

#include "coordinator/scenario/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- estimate and output ---- */

static void conv_samples(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_estimate *e = obj;
	char got[96];
	if (!v || v->kind != YN_SEQ || v->n == 0 || v->n > SCN_MAX_LIST) {
		cli_scn_error(c, v,
			      "%s must be a list of sample counts (e.g. [100000, 500000]), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (!(e->samples = calloc(v->n, sizeof(*e->samples)))) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		if (cli_scn_get_u64(c, v->kids[i], 1, 1000000000000000ull,
				    &e->samples[e->n_samples]) == 0)
			e->n_samples++;
		cli_scn_path_pop(c, mark);
	}
}

static void conv_from_stage(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	if (cli_scn_scalar(c, v, "a stage name or a concurrency"))
		L(c)->from_stage = v;
}

static const struct scn_field estimate_fields[] = {
	SCN_CUSTOM("samples", conv_samples),
	SCN_CUSTOM("from_stage", conv_from_stage),
};

static void conv_estimate(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(estimate_fields)] = { 0 };
	cli_scn_fields(c, v, estimate_fields, N(estimate_fields), &L(c)->s->estimate, seen,
		       cli_scn_hint_for);
	if (v && v->kind == YN_MAP && !seen[0])
		cli_scn_error(c, v, "estimate needs samples (e.g. samples: [100000, 500000])");
}

static void conv_formats(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "json", "csv", "md", "html" };
	struct cl_scn_output *o = obj;
	char got[96];
	if (!v || (v->kind != YN_SEQ && v->kind != YN_SCALAR) || cli_ynode_is_null(v)) {
		cli_scn_error(c, v, "%s must be a list of formats (json, csv, md, html), got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	size_t n = v->kind == YN_SEQ ? v->n : 1;
	o->formats = CL_FMT_JSON; /* results.json is always written */
	for (size_t i = 0; i < n; i++) {
		const struct ynode *x = v->kind == YN_SEQ ? v->kids[i] : v;
		size_t mark = v->kind == YN_SEQ ? cli_scn_path_index(c, i) : c->path_len;
		int f;
		if (cli_scn_get_enum(c, x, names, N(names), &f) == 0)
			o->formats |= 1u << f;
		cli_scn_path_pop(c, mark);
	}
}

static const struct scn_field output_fields[] = {
	SCN_FIELD("dir", SCN_F_NESTR, struct cl_scn_output, dir),
	SCN_CUSTOM("formats", conv_formats),
	SCN_FIELD("requests", SCN_F_BOOL, struct cl_scn_output, requests),
};

static void conv_output(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(output_fields)] = { 0 };
	cli_scn_fields(c, v, output_fields, N(output_fields), &L(c)->s->output, seen,
		       cli_scn_hint_for);
}

/* ---- the whole document ---- */

enum {
	T_NAME,
	T_DESC,
	T_TARGET,
	T_AGENTS,
	T_READY,
	T_WARMUP,
	T_WORKLOAD,
	T_STAGES,
	T_SLO,
	T_ESTIMATE,
	T_OUTPUT,
	T_CLIENT_BOUND,
	T_PLAN,
	T_GENERATE,
	T_COST,
	T__COUNT
};

static void conv_client_bound(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "fail", "warn" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scenario *)obj)->client_bound = (enum cl_client_bound_policy)x;
}

static const struct scn_field top_fields[T__COUNT] = {
	[T_NAME] = SCN_FIELD("name", SCN_F_NESTR, struct cl_scenario, name),
	[T_DESC] = SCN_FIELD("description", SCN_F_STR, struct cl_scenario, description),
	[T_TARGET] = SCN_CUSTOM("target", cli_scn_conv_target),
	[T_AGENTS] = SCN_CUSTOM("agents", cli_scn_conv_agents),
	[T_READY] = SCN_CUSTOM("readiness", cli_scn_conv_readiness),
	[T_WARMUP] = SCN_CUSTOM("warmup", cli_scn_conv_warmup),
	[T_WORKLOAD] = SCN_CUSTOM("workload", cli_scn_conv_workload),
	[T_STAGES] = SCN_CUSTOM("stages", cli_scn_conv_stages),
	[T_SLO] = SCN_CUSTOM("slo", cli_scn_conv_slo),
	[T_ESTIMATE] = SCN_CUSTOM("estimate", conv_estimate),
	[T_OUTPUT] = SCN_CUSTOM("output", conv_output),
	[T_CLIENT_BOUND] = SCN_CUSTOM("client_bound", conv_client_bound),
	[T_PLAN] = SCN_CUSTOM("plan", cli_scn_conv_plan),
	[T_GENERATE] = SCN_CUSTOM("generate", cli_scn_conv_generate),
	[T_COST] = SCN_CUSTOM("cost", cli_scn_conv_cost),
};

/* Finds a stage by name, else (for a number) the concurrency stage with that concurrency. */
static long find_stage(const struct cl_scenario *s, const char *ref)
{
	for (size_t i = 0; i < s->n_stages; i++) {
		if (strcmp(s->stages[i].name, ref) == 0)
			return (long)i;
	}
	uint64_t conc;
	if (cl_parse_u64(ref, UINT32_MAX, &conc) != 0)
		return -1;
	for (size_t i = 0; i < s->n_stages; i++) {
		if (s->stages[i].mode == CL_MODE_CONCURRENCY && s->stages[i].concurrency == conc)
			return (long)i;
	}
	return -1;
}

/* Resolves a stage reference to the stage's name (freeing *name), or reports it. */
static void resolve_stage_ref(struct scn_ctx *c, const struct ynode *at, const char *what,
			      char **name)
{
	struct cl_scenario *s = L(c)->s;
	const char *ref = at->str;
	long i = find_stage(s, ref);
	if (i >= 0) {
		char *p = strdup(s->stages[i].name);
		if (!p) {
			c->oom = true;
			return;
		}
		free(*name);
		*name = p;
		return;
	}
	const char *names[64];
	size_t n = 0;
	char list[300] = "";
	size_t o = 0;
	for (size_t k = 0; k < s->n_stages; k++) {
		if (n < 64)
			names[n++] = s->stages[k].name;
		if (o < sizeof(list))
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "",
					      s->stages[k].name);
	}
	const char *sug = cli_scn_suggest(ref, names, n);
	if (sug)
		cli_scn_error(c, at, "%s '%s' names no stage (did you mean '%s'?)", what, ref, sug);
	else
		cli_scn_error(c, at, "%s '%s' names no stage (stages: %s)", what, ref, list);
}

static void check_target(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scn_target *t = &l->s->target;
	const struct ynode **seen = l->target;
	if (!l->top[T_TARGET]) {
		cli_scn_error(c, l->root,
			      "missing 'target': give target.url (a server such as "
			      "http://127.0.0.1:8000/v1) or target.simulator (the built-in one)");
		return;
	}
	bool sim = seen[TK_SIMULATOR] && t->simulator;
	int given = !!seen[TK_URL] + !!seen[TK_URLS] + sim;
	if (given == 0) {
		cli_scn_error(c, seen[TK_SIMULATOR] ? seen[TK_SIMULATOR] : l->top[T_TARGET],
			      "target needs url (a server such as http://127.0.0.1:"
			      "8000/v1), urls (several endpoints) or simulator (the built-in one)");
		return;
	}
	if (given > 1) {
		/* name the keys given, in the order the table has them */
		const char *names[3];
		int k = 0;
		if (seen[TK_URL])
			names[k++] = "target.url";
		if (sim)
			names[k++] = "target.simulator";
		if (seen[TK_URLS])
			names[k++] = "target.urls";
		const struct ynode *at = seen[TK_URLS] ? seen[TK_URLS] : seen[TK_SIMULATOR];
		if (k == 2)
			cli_scn_error(c, at, "%s and %s are exclusive: give one", names[0],
				      names[1]);
		else
			cli_scn_error(c, at, "%s, %s and %s are exclusive: give one", names[0],
				      names[1], names[2]);
		return;
	}
	if (seen[TK_ROUTE] && !seen[TK_URLS])
		cli_scn_error(c, seen[TK_ROUTE],
			      "target.route needs target.urls (it spreads requests over several "
			      "endpoints)");
	/* Conversations go by session hash unless told otherwise: every turn of one then goes
	 * to the endpoint holding its history in its prefix cache. */
	if (seen[TK_URLS] && !t->route_given)
		t->route = l->s->workload.multi_turn ? CL_ROUTE_SESSION_HASH : CL_ROUTE_ROUND_ROBIN;
	/* target.url is the first endpoint: what a single URL serves (results' target.url, the
	 * server's /metrics and /tokenize) takes the first */
	if (t->n_urls && !(t->url = strdup(t->urls[0])))
		c->oom = true;
	const struct ynode *h2 = cli_scn_target_key(l, "http2"),
			   *streams = cli_scn_target_key(l, "http2_streams_per_connection");
	if (streams && !t->http2)
		cli_scn_error(c, streams,
			      "target.http2_streams_per_connection needs target.http2 (true, "
			      "required or preferred)");
	if (sim && t->http2 && !t->http2_fallback)
		cli_scn_error(c, h2 ? h2 : seen[TK_SIMULATOR],
			      "target.simulator speaks HTTP/1.1 only: target.http2 must be false "
			      "or preferred with it (put an HTTP/2 proxy in front and use "
			      "target.url to test HTTP/2)");
	if (!t->simulator || !l->sim_model) {
		/* a simulator without its own model serves the one the scenario asks for */
		if (t->simulator && t->model)
			cli_scn_sim_append(c, t, "model", t->model);
		return;
	}
	if (t->model) {
		/* the simulator's model may be a comma-separated list */
		const char *list = l->sim_model->str;
		size_t ml = strlen(t->model);
		bool found = false;
		for (const char *p = list; *p && !found;) {
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);
			found = len == ml && strncmp(p, t->model, ml) == 0;
			p = e ? e + 1 : p + len;
		}
		if (!found)
			cli_scn_error(c, seen[2],
				      "target.model '%s' is not served by target.simulator.model "
				      "'%s' (the simulator would answer 404)",
				      t->model, list);
	}
}

static void check_agents(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scn_agents *a = &l->s->agents;
	const struct ynode **seen = l->agents; /* by enum scn_agents_field */
	const struct ynode *at = l->top[T_AGENTS] ? l->top[T_AGENTS] : l->root;
	bool local_zero = l->given.agents_local ? a->local == 0 : a->listen != NULL;
	if (local_zero && !a->listen)
		cli_scn_error(c, seen[AGF_LOCAL] ? seen[AGF_LOCAL] : at,
			      "agents.local is 0 and agents.listen is not set: "
			      "no agent would run the load");
	if (a->listen && a->expect == 0 && local_zero)
		cli_scn_error(c, seen[AGF_EXPECT] ? seen[AGF_EXPECT] : seen[AGF_LISTEN],
			      "agents.listen is set but agents.expect is 0: "
			      "say how many remote agents to wait for");
	if (!a->listen && seen[AGF_EXPECT] && a->expect > 0)
		cli_scn_error(c, seen[AGF_EXPECT],
			      "agents.expect needs agents.listen (the address remote agents "
			      "dial)");
	if ((uint64_t)a->local + a->expect > CL_SCN_MAX_AGENTS)
		cli_scn_error(c, seen[AGF_EXPECT] ? seen[AGF_EXPECT] : at,
			      "agents.local (%u) and agents.expect (%u) make %llu agents; a run "
			      "takes at most %u",
			      a->local, a->expect, (unsigned long long)a->local + a->expect,
			      CL_SCN_MAX_AGENTS);
	if (seen[AGF_TOKEN_ENV] && seen[AGF_TOKEN_FILE])
		cli_scn_error(c, seen[AGF_TOKEN_FILE],
			      "agents.token_env and agents.token_file are exclusive: give one");
	bool tls_url = a->listen && strncmp(a->listen, "tls+", 4) == 0;
	if (seen[AGF_TLS] && a->listen && !tls_url)
		cli_scn_error(c, seen[AGF_TLS],
			      "agents.tls is set but agents.listen '%s' is not a tls+tcp:// "
			      "address",
			      a->listen);
	if (tls_url && (!a->tls_cert || !a->tls_key))
		cli_scn_error(c, seen[AGF_LISTEN],
			      "agents.listen uses TLS: set agents.tls.cert and agents.tls.key");
}

/* A server's model is found by the readiness gate (the first /models lists) unless the
 * scenario names it: without the gate, target.model is the only source.  The simulator
 * serves a model of its own. */
static void check_model_known(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	const struct cl_scenario *s = l->s;
	if (l->top[T_TARGET] && !s->target.model && !s->target.simulator && !s->readiness.enabled)
		cli_scn_error(c, l->top[T_READY],
			      "target.model is required when readiness is disabled (the gate is "
			      "what finds the model the server lists): name it, or enable "
			      "readiness");
}

static void check_stages(struct scn_ctx *c)
{
	struct scn_loader *l = L(c);
	struct cl_scenario *s = l->s;
	cli_scn_check_generate(c, l->top[T_GENERATE], l->top[T_STAGES]);
	if (l->top[T_GENERATE] && l->top[T_WARMUP])
		cli_scn_error(c, l->top[T_WARMUP],
			      "warmup is not used by a generate job (every request it sends is one "
			      "of the input's): remove it");
	const struct ynode *urls = cli_scn_target_key(l, "urls");
	if (l->top[T_GENERATE] && urls)
		cli_scn_error(c, urls,
			      "a generate job sends to one endpoint: give target.url (several "
			      "endpoints are for stages)");
	if (l->top[T_GENERATE] && s->output.requests)
		cli_scn_error(c, l->top[T_OUTPUT],
			      "output.requests is for benchmark stages: a generate job already "
			      "writes one line per request to generate.output and generate.errors");
	if (!l->top[T_STAGES] && !l->top[T_GENERATE])
		cli_scn_error(c, l->root,
			      "missing 'stages': add at least one, e.g. stages: [ { "
			      "concurrency: 8, duration: 1m } ]");
	size_t n = s->n_stages < SCN_MAX_STAGES ? s->n_stages : SCN_MAX_STAGES;
	for (size_t i = 1; i < n; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s->stages[i].name, s->stages[j].name) == 0) {
				cli_scn_error(c, l->stage_nodes[i],
					      "stage name '%s' is used twice (also by the "
					      "stage at line %d); names must be unique",
					      s->stages[i].name, s->stages[j].line);
				break;
			}
		}
	}
	for (size_t i = 0; i < s->n_slos && i < SCN_MAX_SLOS; i++) {
		if (l->slo_stage_nodes[i])
			resolve_stage_ref(c, l->slo_stage_nodes[i], "slo.stage", &s->slos[i].stage);
	}
	if (l->from_stage)
		resolve_stage_ref(c, l->from_stage, "estimate.from_stage", &s->estimate.from_stage);
	cli_scn_check_search(c, l->top[T_PLAN]);
	cli_scn_check_replay(c);
}

static void convert(struct scn_loader *l)
{
	struct scn_ctx *c = &l->c;
	struct cl_scenario *s = l->s;
	char got[96];
	if (l->root->kind != YN_MAP) {
		cli_scn_error(c, l->root,
			      "a scenario must be a mapping of keys (name, target, stages, ...), "
			      "got %s",
			      cli_scn_describe(l->root, got, sizeof(got)));
		return;
	}
	cli_scn_fields(c, l->root, top_fields, T__COUNT, s, l->top, cli_scn_hint_for);
	check_target(c);
	check_model_known(c);
	check_agents(c);
	check_stages(c);
	if (s->n_stages > SCN_MAX_STAGES)
		s->n_stages = SCN_MAX_STAGES;
	if (s->n_slos > SCN_MAX_SLOS)
		s->n_slos = SCN_MAX_SLOS;
	if (cli_scenario_derive_defaults(s, &l->given, c->file))
		c->oom = true;
}

/* The directory of path ("" for none), for resolving relative paths inside the scenario. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup("");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

int cl_scenario_load_string(const char *text, size_t len, const char *name,
			    const char *const *overrides, struct cl_scenario *out,
			    struct cl_diags *diags)
{
	struct scn_loader *l = calloc(1, sizeof(*l));
	struct ytree tree = { 0 };
	char *dir = NULL;
	int rc = CL_ENOMEM;
	cl_scenario_defaults(out);
	if (!name)
		name = "<scenario>";
	if (!l || !(dir = dir_of(name)) || !(out->file = strdup(name)))
		goto out;
	struct scn_ctx *c = &l->c;
	c->file = name;
	c->dir = dir;
	c->diags = diags;
	l->s = out;

	if (len > CL_SCENARIO_MAX_BYTES) {
		cli_scn_error(c, NULL, "the scenario is larger than %u MiB; refusing to read it",
			      CL_SCENARIO_MAX_BYTES >> 20);
		rc = CL_ETOOBIG;
		goto out;
	}
	struct ynode *root = NULL;
	rc = cli_ytree_parse(c, &tree, text, len, NULL, &root);
	if (rc) {
		rc = rc == CL_EPARSE ? CL_EINVAL : rc;
		goto out;
	}
	if (!root) {
		cli_scn_error(c, NULL,
			      "the scenario is empty (expected a mapping with at least 'target' "
			      "and 'stages')");
		rc = CL_EINVAL;
		goto out;
	}
	tree.root = root;
	if (root->kind == YN_MAP) {
		for (size_t i = 0; overrides && overrides[i]; i++) {
			int orc = cli_ytree_override(c, &tree, overrides[i]);
			if (orc == CL_ENOMEM || orc == CL_ETOOBIG) {
				rc = orc;
				goto out;
			}
		}
	}
	l->root = tree.root;
	convert(l);
	rc = c->oom ? CL_ENOMEM : c->n_errors ? CL_EINVAL : 0;
out:
	if (rc == CL_ENOMEM && l) {
		struct cl_err e;
		cl_err_setpos(&e, CL_ENOMEM, name, 0, 0,
			      "out of memory while loading the scenario");
		cl_diags_add(diags, &e);
	}
	if (rc)
		cl_scenario_free(out);
	if (l)
		free(l->slo_stage_nodes);
	free(l);
	free(dir);
	cli_ytree_free(&tree);
	return rc;
}

int cl_scenario_load_file(const char *path, const char *const *overrides, struct cl_scenario *out,
			  struct cl_diags *diags)
{
	struct cl_buf b;
	struct cl_err e;
	struct stat st;
	int rc;
	cl_scenario_defaults(out);
	cl_buf_init(&b, CL_SCENARIO_MAX_BYTES);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		cl_err_set(&e, CL_EIO, "cannot read scenario '%s': Is a directory", path);
		cl_diags_add(diags, &e);
		return CL_EIO;
	}
	rc = cl_buf_read_file(&b, path);
	if (rc == CL_ETOOBIG) {
		cl_err_setpos(&e, CL_ETOOBIG, path, 0, 0,
			      "the scenario is larger than %u MiB; refusing to read it",
			      CL_SCENARIO_MAX_BYTES >> 20);
		cl_diags_add(diags, &e);
		cl_buf_free(&b);
		return rc;
	}
	if (rc) {
		int err = errno;
		cl_err_set(&e, rc, "cannot open scenario '%s': %s", path,
			   rc == CL_ENOMEM ? "out of memory" : strerror(err));
		cl_diags_add(diags, &e);
		cl_buf_free(&b);
		return rc;
	}
	rc = cl_scenario_load_string(b.data ? b.data : "", b.len, path, overrides, out, diags);
	cl_buf_free(&b);
	return rc;
}
