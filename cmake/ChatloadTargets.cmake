# Per-target compile settings shared by every chatload target (no global flags).

# chatload_target(TARGET): warnings, sanitizers and the project's feature macros.
function(chatload_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
                                           -Wmissing-prototypes -Wno-unused-parameter)
  target_compile_definitions(${target} PRIVATE _GNU_SOURCE
                             CHATLOAD_VERSION="${PROJECT_VERSION}")
  if(CHATLOAD_FUZZ)
    # Coverage feedback for the libraries the fuzz targets exercise, not only the targets.
    # -fno-sanitize-recover: undefined behaviour aborts, so libFuzzer keeps it as a finding
    # instead of printing a report and going on.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(CHATLOAD_SANITIZE)
    string(REPLACE "," ";" _san "${CHATLOAD_SANITIZE}")
    foreach(s IN LISTS _san)
      target_compile_options(${target} PRIVATE -fsanitize=${s} -fno-omit-frame-pointer
                                               -fno-sanitize-recover=all)
      target_link_options(${target} PRIVATE -fsanitize=${s})
    endforeach()
  endif()
endfunction()

# chatload_programs(TARGET...): the shipped programs.  They all land in <build>/bin, side by
# side as when installed, so the coordinator finds its siblings next to itself (run/spawn.h).
function(chatload_programs)
  set_target_properties(${ARGN} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()
