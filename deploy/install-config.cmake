# Install time: writes the files that name install paths — the agent's and the nightly
# job's systemd units and agent.env — for the prefix being installed to (CMAKE_INSTALL_PREFIX here is the install-time
# one: /usr when cpack builds the .deb, else what `cmake --install --prefix` says).  Included
# by an install(CODE) in deploy/CMakeLists.txt, which sets CHATLOAD_DEPLOY_SRC/_BUILD and
# CHATLOAD_BINDIR_REL/CHATLOAD_DATADIR_REL.
set(prefix "${CMAKE_INSTALL_PREFIX}")
# GNUInstallDirs' rule for sysconfdir: /etc for the /usr prefix, else <prefix>/etc.
if(prefix STREQUAL "/usr")
  set(CHATLOAD_ETC "/etc")
else()
  set(CHATLOAD_ETC "${prefix}/etc")
endif()
set(CHATLOAD_BINDIR "${prefix}/${CHATLOAD_BINDIR_REL}")
set(unitdir "${prefix}/lib/systemd/system")
set(destdir "$ENV{DESTDIR}")

# A staging directory per destination, so a cpack and a `cmake --install` at once do not mix.
string(MD5 tag "${destdir}|${prefix}")
set(stage "${CHATLOAD_DEPLOY_BUILD}/configured-${tag}")
configure_file("${CHATLOAD_DEPLOY_SRC}/systemd/chatload-agent.service.in"
               "${stage}/chatload-agent.service" @ONLY)
configure_file("${CHATLOAD_DEPLOY_SRC}/systemd/agent.env.in" "${stage}/agent.env" @ONLY)
configure_file("${CHATLOAD_DEPLOY_SRC}/systemd/chatload-nightly.service.in"
               "${stage}/chatload-nightly.service" @ONLY)

# file(INSTALL) puts $DESTDIR in front of these itself.
file(INSTALL "${stage}/chatload-agent.service" "${stage}/chatload-nightly.service"
     "${CHATLOAD_DEPLOY_SRC}/systemd/chatload-nightly.timer" DESTINATION "${unitdir}")
# agent.env is the operator's file (a conffile in the .deb): never overwrite an edited one.
if(EXISTS "${destdir}${CHATLOAD_ETC}/chatload/agent.env")
  message(STATUS "Keeping: ${destdir}${CHATLOAD_ETC}/chatload/agent.env")
else()
  file(INSTALL "${stage}/agent.env" DESTINATION "${CHATLOAD_ETC}/chatload")
endif()
# The pristine copy, for reference and for operators who keep their own.
file(INSTALL "${stage}/agent.env" DESTINATION "${prefix}/${CHATLOAD_DATADIR_REL}/chatload"
     RENAME agent.env.example)
