/* wire: being written. */
typedef int cl_placeholder_wire;
