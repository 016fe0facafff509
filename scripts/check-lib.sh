# Shared by the CI check scripts and tests/consumers/run_consumers.sh (sourced; the caller defines
# fail). CMake wraps its error messages by width, so where a text breaks over lines depends on
# the paths in the message: these match with runs of blanks and newlines taken as one blank.

# log_has <text> <file>: whether <file> holds <text>.
log_has() { tr -s ' \n' '  ' <"$2" | grep -cF -- "$1" >/dev/null; }

# expect_in <file> <text> <what>: fails (printing the file's tail) unless <file> holds <text>.
expect_in() { log_has "$2" "$1" || { tail -40 "$1" >&2; fail "$3: '$2' not in $1"; }; }
