"""What the command-line test scripts share: a tally of named checks that
prints one line per check and closes with the "N passed, N failed" line
CTest's log shows."""
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
