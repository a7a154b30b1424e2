/* workload: being written. */
typedef int cl_placeholder_workload;
