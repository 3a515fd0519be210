# Shared by the start scripts of local servers (sourced): is a process alive?
# alive PID: true while PID runs and is not a zombie. Read from /proc/PID/status, not cmdline: a process in the
# middle of exec() reads an empty cmdline for a moment, and a start would take a server coming up for dead.
alive() {
  local state
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}
