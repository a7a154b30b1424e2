/* hist: being written. */
typedef int cl_placeholder_hist;
