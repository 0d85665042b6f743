"""What the command-line test scripts share: a tally of named checks that
prints one line per check and closes with the "N passed, N failed" line
CTest's log shows."""
import os
import sys


class Checks:
    def __init__(self):
        self.passed = 0
        self.failures = []

    def __call__(self, condition, message):
        print(("ok: " if condition else "FAIL: ") + message)
        if condition:
            self.passed += 1
        else:
            self.failures.append(message)
        return condition

    def finish(self):
        """Prints the closing line and exits non-zero if any check failed."""
        print(f"{self.passed} passed, {len(self.failures)} failed")
        sys.exit(1 if self.failures else 0)


def refusal_problems(result, needles=(), status=2, result_file=None):
    """What is wrong with a finished gcsim call that should have refused its
    input: the exit status, not exactly one line on stderr, a needle missing
    from it, or `result_file` written anyway. Empty when it refused well."""
    problems = []
    if result.returncode != status:
        problems.append(f"exit status {result.returncode}, expected {status}")
    lines = result.stderr.strip().splitlines()
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr, expected 1: {result.stderr.strip()[:300]!r}")
    problems += [f"message lacks {needle!r}: {result.stderr.strip()[:300]!r}"
                 for needle in needles if needle not in result.stderr]
    if result_file and os.path.exists(result_file):
        problems.append(f"{os.path.basename(result_file)} was written")
    return problems
