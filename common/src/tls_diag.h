/* Why a TLS handshake with the coordinator fails, said so an operator can act on it
 * (internal to chatload_common: used by transport.c). */
#ifndef CHATLOAD_TLS_DIAG_H
#define CHATLOAD_TLS_DIAG_H

#include "chatload/transport.h"

#include <stddef.h>

/*
 * Connects to host:port, shakes hands as nng would with tls (CA, server name or else host,
 * client certificate), and writes into out (size n) what is wrong: the certificate is not
 * signed by the CA in --tls-ca (naming its issuer), does not name the server name (naming
 * the names it has), has expired or is not yet valid (with the date), or the coordinator
 * ended the handshake (wanting or refusing a client certificate).  Returns 1 when it found
 * something (out filled), 0 when this handshake works.  Blocks up to about timeout_ms once
 * connected.
 */
int cli_tls_diagnose(const char *host, const char *port, const struct cl_tls_opts *tls,
		     int timeout_ms, char *out, size_t n);

#endif
