/* The REPORTs awaiting their ACK, oldest first, in the session's fixed ring of
 * MAX_PENDING_REPORTS (state.h): each encoded once with its seq, so a resend after a lost ACK
 * is the same message.  Pushed by activity.c and probe_thread.c, sent and answered by
 * session.c.  Calls nothing of the daemon but state.h. */
#ifndef CHATLOAD_AGENT_DAEMON_REPORT_QUEUE_H
#define CHATLOAD_AGENT_DAEMON_REPORT_QUEUE_H

#include "agent/daemon/state.h"

/* Queues a report, encoded now with the next seq; an interval report is sent its share of
 * the spread later (cl_wire_report_spread_us), the others at once.  Logs and drops it when
 * the queue is full or it cannot be encoded. */
void cl_report_queue_push(struct session *s, struct cl_msg_report *rep, const char *what);

/* The oldest queued report (the one to send), NULL when none is queued. */
struct pending_report *cl_report_queue_head(struct session *s);

/* Checks the coordinator's reply to the oldest report and takes that report off the queue
 * when ACKed or refused: 0, CL_EREFUSED (dropped) or CL_EPROTO (kept for the next try), with
 * err filled. */
int cl_report_queue_answered(struct session *s, const struct cl_msg *reply, struct cl_err *err);

/* Drops every queued report. */
void cl_report_queue_clear(struct session *s);

#endif
