// The test binary's process-wide setup, run before any test (see ignore_sigpipe.c).
#ifndef TEST_PROCESS_SETUP_H
#define TEST_PROCESS_SETUP_H

/// True once the test process ignores SIGPIPE (set before main by a constructor).
int test_process_ignores_sigpipe(void);

#endif
