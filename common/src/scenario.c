/* scenario: being written. */
typedef int cl_placeholder_scenario;
