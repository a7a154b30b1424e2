/* The scenario loader's agents section: how many local agents, remote agents' listen
 * address, token and TLS, workers, timeouts, what a lost agent means, and the source
 * addresses local agents bind to. */
#include "coordinator/scenario/scenario.h"

#include "coordinator/scenario/internal.h"

#include <stdlib.h>
#include <string.h>

#define SEC  1000000LL
#define DAY  (86400LL * SEC)
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void conv_listen(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const schemes[] = { "tcp://",     "tcp4://",     "tcp6://",
					       "tls+tcp://", "tls+tcp4://", "tls+tcp6://",
					       "ipc://" };
	struct cl_scn_agents *a = obj;
	char got[96];
	if (cli_scn_get_str(c, v, true, &a->listen) != 0)
		return;
	for (size_t i = 0; i < N(schemes); i++) {
		size_t l = strlen(schemes[i]);
		if (strncmp(a->listen, schemes[i], l) == 0 && a->listen[l])
			return;
	}
	cli_scn_error(c, v,
		      "%s must be an address such as tls+tcp://0.0.0.0:7700 or tcp://"
		      "127.0.0.1:7700, got %s",
		      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
}

static void conv_on_loss(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	static const char *const names[] = { "fail", "continue" };
	int x;
	if (cli_scn_get_enum(c, v, names, N(names), &x) == 0)
		((struct cl_scn_agents *)obj)->on_loss = (enum cl_on_loss)x;
}

static const struct scn_field agents_tls_fields[] = {
	SCN_FIELD("cert", SCN_F_NESTR, struct cl_scn_agents, tls_cert),
	SCN_FIELD("key", SCN_F_NESTR, struct cl_scn_agents, tls_key),
	SCN_FIELD("ca", SCN_F_NESTR, struct cl_scn_agents, tls_ca),
};

static void conv_agents_tls(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	const struct ynode *seen[N(agents_tls_fields)] = { 0 };
	cli_scn_fields(c, v, agents_tls_fields, N(agents_tls_fields), obj, seen, NULL);
	if (!seen[0] != !seen[1])
		cli_scn_error(c, seen[0] ? seen[0] : seen[1], "%s needs both cert and key",
			      cli_scn_path(c));
}

static void conv_agents_local(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_agents *a = obj;
	L(c)->given.agents_local = true;
	/* auto: the run decides how many, from the largest stage and the descriptor limit
	 * (run/setup.c); 1 until then, so the checks between keys see agents that run load. */
	if (v->kind == YN_SCALAR && strcmp(v->str, "auto") == 0) {
		a->local_auto = true;
		a->local = 1;
		return;
	}
	cli_scn_get_u32(c, v, 0, 256, &a->local);
}

/* agents.source_addresses: a list of addresses and IPv4 blocks, expanded into one pool. */
static void conv_source_addresses(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct cl_scn_agents *a = obj;
	char got[96];
	if (v->kind != YN_SEQ || v->n == 0) {
		cli_scn_error(c, v,
			      "%s must be a list of local addresses or IPv4 blocks, e.g. "
			      "[127.0.0.2, 127.0.0.3] or [127.0.0.0/30], got %s",
			      cli_scn_path(c), cli_scn_describe(v, got, sizeof(got)));
		return;
	}
	if (!a->source && !(a->source = calloc(1, sizeof(*a->source)))) {
		cli_scn_error(c, v, "out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		size_t mark = cli_scn_path_index(c, i);
		char *text = NULL;
		struct cl_err err = { 0 };
		size_t before = a->source->n;
		if (cli_scn_get_str(c, v->kids[i], true, &text) == 0 &&
		    cl_srcaddr_add(a->source, text, &err) != 0)
			cli_scn_error(c, v->kids[i], "%s: %s", cli_scn_path(c), err.msg);
		/* Local agents bind to them on this host: one this host lacks would fail every
		 * connection, so it is found here, where the file's position can be named. */
		for (size_t k = before; k < a->source->n; k++) {
			if (cl_srcaddr_check_local(a->source->addr[k], &err) != 0) {
				cli_scn_error(c, v->kids[i], "%s: %s", cli_scn_path(c), err.msg);
				break;
			}
		}
		free(text);
		cli_scn_path_pop(c, mark);
	}
}

static const struct scn_field agents_fields[] = {
	[AGF_LOCAL] = SCN_CUSTOM("local", conv_agents_local),
	[AGF_LISTEN] = SCN_CUSTOM("listen", conv_listen),
	[AGF_EXPECT] =
	    SCN_RANGE("expect", SCN_F_U32, struct cl_scn_agents, expect, 0, CL_SCN_MAX_AGENTS),
	[AGF_JOIN_TIMEOUT] =
	    SCN_RANGE("join_timeout", SCN_F_DUR, struct cl_scn_agents, join_timeout_us, 1, DAY),
	[AGF_ON_LOSS] = SCN_CUSTOM("on_loss", conv_on_loss),
	[AGF_WORKERS] = SCN_RANGE("workers", SCN_F_U32, struct cl_scn_agents, workers, 0, 1024),
	[AGF_TOKEN_ENV] = SCN_FIELD("token_env", SCN_F_ENV, struct cl_scn_agents, token_env),
	[AGF_TOKEN_FILE] = SCN_FIELD("token_file", SCN_F_NESTR, struct cl_scn_agents, token_file),
	[AGF_TLS] = SCN_CUSTOM("tls", conv_agents_tls),
	[AGF_REPORT_INTERVAL] = SCN_RANGE("report_interval", SCN_F_DUR, struct cl_scn_agents,
					  report_interval_us, 100000, 60 * SEC),
	[AGF_SOURCE_ADDRESSES] = SCN_CUSTOM("source_addresses", conv_source_addresses),
};
_Static_assert(N(agents_fields) == AGF__COUNT, "one field per index");
_Static_assert(AGF__COUNT <= N(((struct scn_loader *)0)->agents), "room for every key");

void cli_scn_conv_agents(struct scn_ctx *c, const struct ynode *v, void *obj)
{
	struct scn_loader *l = L(c);
	cli_scn_fields(c, v, agents_fields, N(agents_fields), &l->s->agents, l->agents,
		       cli_scn_hint_for);
}
