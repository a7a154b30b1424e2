/* metrics: being written. */
typedef int cl_placeholder_metrics;
