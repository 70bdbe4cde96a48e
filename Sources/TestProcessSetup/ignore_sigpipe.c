// The test binary ignores SIGPIPE, as the shipped binaries do (push-connector and fcm-emulator
// call signal(SIGPIPE, SIG_IGN) first thing). Tests write to pipes and sockets of processes and
// servers that may already be gone (a child's stdin, a connection the server cut); with the
// default disposition one such write kills the whole test run at once, every later test unrun
// and no test named. Ignored, the write fails with EPIPE and the test that made it fails, named.
// A constructor, so that it holds before the first test of any target, exit-test children too.
#include <signal.h>
#include <stddef.h>
#include "TestProcessSetup.h"

__attribute__((constructor)) static void ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int test_process_ignores_sigpipe(void) {
    struct sigaction current;
    return sigaction(SIGPIPE, NULL, &current) == 0 && current.sa_handler == SIG_IGN;
}
