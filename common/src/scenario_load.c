/* scenario_load: being written. */
typedef int cl_placeholder_scenario_load;
