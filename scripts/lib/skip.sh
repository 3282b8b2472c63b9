# shellcheck shell=bash
# The skip protocol of scripts/lib/steps.sh, for a step script (scripts/test-*.sh).

# For a step script: skip with REASON (exit 77) when run by the runner, or say so and exit 0
# when run by hand (a person reads the line).
skip_step() { # REASON
  echo "skipped: $1"
  if [ -n "${PIDGUARD_SKIP_FILE:-}" ]; then
    printf '%s\n' "$1" >"$PIDGUARD_SKIP_FILE"
    exit 77
  fi
  exit 0
}
