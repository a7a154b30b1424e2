/* The state of a generate job, shared by the job (run/generate.c: its input, leases, agents
 * and results) and its answers (run/generate_answers.c); internal to those two files. */
#ifndef CHATLOAD_RUN_GENERATE_INT_H
#define CHATLOAD_RUN_GENERATE_INT_H

#include "coordinator/run/internal.h"

#include "coordinator/generate/batch.h"

#include "chatload/metrics.h"
#include "chatload/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RATE_WINDOW 16 /* progress: the rate over the last this many seconds */

/* One id leased to an agent: its body stays here until the answer is written, so a lost
 * agent's ids can be given to another. */
struct lease {
	char *id, *body;
	size_t body_len;
};

/* A LEASE command queued in the fleet: its items borrow the leases' strings, so the array
 * lives until the agent applied it (or the job ends). */
struct sent_lease {
	struct sent_lease *next;
	uint64_t cmd_seq;
	struct cl_gen_item *items;
};

struct gen_agent {
	uint32_t share;          /* streams in flight this agent runs */
	double rate_per_s;       /* generate.rate: its part (0: none) */
	bool started, lost_done; /* GENERATE sent; its loss handled */
	struct lease *held;      /* leased, not answered */
	size_t n_held, cap_held;
	struct sent_lease *sent;
};

struct run_gen {
	/* The ids already answered, read from output and errors: needed only until the input is
	 * checked, then freed, so the run holds no set of ids (send says what to send). */
	struct cl_gen_idset done;
	/* The lines of the Batch input (or the spool) still to send: one bit each, filled by
	 * the check, read by the leases. */
	struct cl_gen_lineset send;
	struct cl_gen_out out;
	struct cl_gen_scan scan;
	struct cl_gen_reader reader;
	/* generate.input_format a dataset: its records rendered into a Batch file, the spool,
	 * which the job then reads as it reads a Batch input (the one way ids are leased,
	 * skipped and resumed).  Its bodies name the model known before the readiness gate
	 * (old_model); when the gate found another, each is given the one found as leased. */
	struct cl_gen_spool spool;
	const char *old_model;
	bool swap_model;
	struct lease *pool; /* a lost agent's leases, to be given again */
	size_t n_pool, cap_pool;
	struct gen_agent agents[CL_FLEET_MAX_AGENTS];
	uint32_t weights[CL_FLEET_MAX_AGENTS]; /* a split's weights (weigh_agents) */
	struct cl_metrics m;
	bool m_ready;
	uint64_t written, failed, attempts, duplicates, output_tokens, retried_answers;
	uint64_t reissued;
	uint64_t total; /* to send this run */
	int64_t start_us;
	/* generate.estimate_from: the benchmark's sustained rate the job was planned with */
	struct {
		bool set;
		bool client_bound; /* its stage measured the client: the plan may be too long */
		double requests_per_s, output_tokens_per_request;
		char stage[128];
	} plan;
	uint64_t done_at[RATE_WINDOW]; /* written+failed at each of the last seconds */
	uint64_t tok_at[RATE_WINDOW];
	int64_t second;
	bool write_failed;
	bool closed; /* the job ended: answers that still come are not written (nor ACKed), so
		      * the tally in results.json is the file's; a rerun sends those ids again */
	char fatal[900];
	/* failed tries that were tried again, by class (the answers' retries summed) */
	uint64_t retries[CL_GEN_ERR_CLASSES];
};

/* Frees a lease's id and body and zeroes it (run/generate.c). */
void cli_run_gen_lease_free(struct lease *l);

/* A class's name in results and messages: its counter's name without "err_" ("other" for
 * what is not an error counter). */
const char *cli_run_gen_class_name(int ctr);

/* The fleet's on_answers: every answer of m from agent fa written and its lease dropped.  0,
 * or -1 when the job's files failed or it has ended (the ANSWERS is then not acknowledged,
 * so nothing is lost: a rerun sends those ids again). */
int cli_run_gen_on_answers(void *ctx, struct cl_fleet_agent *fa, struct cl_msg_answers *m);

#endif
