/* The fleet's address book: each pipe's remote address, read when the pipe is added. */
#include "coordinator/fleet/internal.h"

#include "chatload/err.h"
#include "chatload/transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define PEERS_KEPT 256

struct cli_fleet_peers {
	pthread_mutex_t mu; /* nng calls back on its own threads */
	struct {
		uint32_t pipe; /* 0: empty */
		char addr[96];
	} e[PEERS_KEPT];
	size_t next; /* the slot the next pipe takes (the oldest) */
};

static void on_pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	(void)ev;
	struct cli_fleet_peers *p = arg;
	char addr[96];
	int id = nng_pipe_id(pipe);
	if (id <= 0 || cl_transport_pipe_addr(pipe, addr, sizeof(addr)) != 0)
		return;
	pthread_mutex_lock(&p->mu);
	p->e[p->next].pipe = (uint32_t)id;
	snprintf(p->e[p->next].addr, sizeof(p->e[p->next].addr), "%s", addr);
	p->next = (p->next + 1) % PEERS_KEPT;
	pthread_mutex_unlock(&p->mu);
}

int cli_fleet_peers_open(nng_socket sock, struct cli_fleet_peers **out)
{
	*out = NULL;
	struct cli_fleet_peers *p = calloc(1, sizeof(*p));
	if (!p)
		return CL_ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	if (nng_pipe_notify(sock, NNG_PIPE_EV_ADD_POST, on_pipe_added, p) != 0) {
		cli_fleet_peers_free(p);
		return CL_ESYS;
	}
	*out = p;
	return 0;
}

char *cli_fleet_peers_name(struct cli_fleet_peers *p, nng_msg *msg, char *buf, size_t n)
{
	nng_pipe pipe = nng_msg_get_pipe(msg);
	if (cl_transport_pipe_addr(pipe, buf, n) == 0)
		return buf;
	int id = nng_pipe_id(pipe);
	snprintf(buf, n, "peer of closed pipe %d", id);
	if (!p || id <= 0)
		return buf;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < PEERS_KEPT; i++) {
		if (p->e[i].pipe == (uint32_t)id) {
			snprintf(buf, n, "%s", p->e[i].addr);
			break;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return buf;
}

void cli_fleet_peers_free(struct cli_fleet_peers *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p);
}
