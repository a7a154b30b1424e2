/* plan: being written. */
typedef int cl_placeholder_plan;
