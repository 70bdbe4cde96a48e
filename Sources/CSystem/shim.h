// Swift face of Linux process and thread controls that Swift cannot call directly (C-variadic prctl).
#pragma once
#include <sys/prctl.h>

/// prctl(PR_SET_DUMPABLE, value): 0 forbids core dumps and ptrace attach by other users, and
/// makes /proc/<pid> files owned by root.
static inline int pc_set_dumpable(int value) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)value, 0UL, 0UL, 0UL);
}

/// prctl(PR_SET_NAME, name): names the calling thread (the kernel keeps 15 bytes), as `top -H`
/// and `/proc/<pid>/task/*/comm` show it.
static inline int pc_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

#include <sys/eventfd.h>

/// eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC): a counter a loop polls as readable while non-zero,
/// the wake-up of one loop thread (one descriptor, where a self-pipe takes two).
static inline int pc_eventfd_nonblocking(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}
