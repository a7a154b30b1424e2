/* Source-address pools (chatload/srcaddr.h). */
#include "chatload/srcaddr.h"

#include "chatload/units.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int put(struct cl_srcaddr_pool *p, const char *text, const char *spec, struct cl_err *err)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->addr[i], text) == 0)
			return cl_err_set(err, CL_EINVAL, "source address '%s' is given twice",
					  text);
	if (p->n == CL_SRCADDR_MAX)
		return cl_err_set(err, CL_ERANGE,
				  "source address '%s' makes the pool larger than %d addresses",
				  spec, CL_SRCADDR_MAX);
	snprintf(p->addr[p->n++], CL_SRCADDR_TEXTMAX, "%s", text);
	return 0;
}

int cl_srcaddr_add(struct cl_srcaddr_pool *p, const char *spec, struct cl_err *err)
{
	char text[64];
	struct in_addr a4;
	struct in6_addr a6;
	if (!spec || !*spec || strlen(spec) >= sizeof(text))
		return cl_err_set(err, CL_EINVAL, "source address '%.60s' is not an IP address",
				  spec ? spec : "");
	const char *slash = strchr(spec, '/');
	if (!slash) {
		/* Written back as inet_ntop does, so "127.000.0.2" and "127.0.0.2" are one. */
		if (inet_pton(AF_INET, spec, &a4) == 1)
			inet_ntop(AF_INET, &a4, text, sizeof(text));
		else if (inet_pton(AF_INET6, spec, &a6) == 1)
			inet_ntop(AF_INET6, &a6, text, sizeof(text));
		else
			return cl_err_set(err, CL_EINVAL,
					  "source address '%s' is not a numeric IPv4 or IPv6 "
					  "address or IPv4 CIDR block (A.B.C.D/LEN)",
					  spec);
		return put(p, text, spec, err);
	}
	char base[32];
	size_t bl = (size_t)(slash - spec);
	uint64_t len;
	if (bl >= sizeof(base) || cl_parse_u64(slash + 1, 128, &len) != 0)
		goto bad;
	memcpy(base, spec, bl);
	base[bl] = '\0';
	if (inet_pton(AF_INET, base, &a4) != 1)
		goto bad;
	if (len < 16 || len > 32)
		return cl_err_set(err, CL_ERANGE,
				  "source address block '%s': the prefix length must be 16..32 (at "
				  "most %d addresses are used)",
				  spec, CL_SRCADDR_MAX);
	uint32_t host_bits = 32 - (uint32_t)len;
	uint32_t mask = host_bits == 32 ? 0 : ~((1u << host_bits) - 1);
	uint32_t first = ntohl(a4.s_addr) & mask;
	uint32_t count = 1u << host_bits;
	uint32_t lo = 0, hi = count;
	if (host_bits >= 2) { /* the network and broadcast addresses are no hosts' */
		lo = 1;
		hi = count - 1;
	}
	if (hi - lo > CL_SRCADDR_MAX - p->n)
		return cl_err_set(err, CL_ERANGE,
				  "source address block '%s' holds %u addresses: the pool takes at "
				  "most %d",
				  spec, hi - lo, CL_SRCADDR_MAX);
	for (uint32_t i = lo; i < hi; i++) {
		struct in_addr x = { .s_addr = htonl(first + i) };
		inet_ntop(AF_INET, &x, text, sizeof(text));
		int rc = put(p, text, spec, err);
		if (rc)
			return rc;
	}
	return 0;
bad:
	return cl_err_set(err, CL_EINVAL,
			  "source address block '%s' is not an IPv4 CIDR block (A.B.C.D/LEN)",
			  spec);
}

int cl_srcaddr_check_local(const char *addr, struct cl_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		sl = sizeof(*in);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		sl = sizeof(*in6);
	} else {
		return cl_err_set(err, CL_EINVAL, "source address '%s' is not an IP address", addr);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cl_err_set(err, CL_ESYS, "cannot check source address '%s': socket: %s",
				  addr, strerror(errno));
	int rc = 0;
	if (bind(fd, (struct sockaddr *)&ss, sl) != 0)
		rc = cl_err_set(err, CL_EREFUSED,
				"source address '%s' is not an address of this host (bind: %s)",
				addr, strerror(errno));
	close(fd);
	return rc;
}

uint32_t cl_srcaddr_ephemeral_ports(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (!f)
		return 0;
	char line[64], lo_text[24];
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (!ok)
		return 0;
	/* "32768\t60999\n" */
	size_t n = strcspn(line, " \t");
	char *hi_text = line + n + strspn(line + n, " \t");
	hi_text[strcspn(hi_text, " \t\r\n")] = '\0';
	uint64_t lo, hi;
	if (n == 0 || n >= sizeof(lo_text))
		return 0;
	memcpy(lo_text, line, n);
	lo_text[n] = '\0';
	if (cl_parse_u64(lo_text, 65535, &lo) || cl_parse_u64(hi_text, 65535, &hi) || hi < lo)
		return 0;
	return (uint32_t)(hi - lo + 1);
}
