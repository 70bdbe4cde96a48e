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

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/// The CPUs the calling process may run on (its affinity mask, as taskset or a cpuset sets it);
/// -1 when it cannot be read. The raw system call: glibc's CPU_COUNT and sched_getaffinity need
/// _GNU_SOURCE, which a Swift module's headers do not get.
static inline int pc_affinity_cpu_count(void) {
    unsigned long mask[16];  // 1 024 CPUs
    memset(mask, 0, sizeof mask);
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (bytes <= 0) return -1;
    int count = 0;
    for (long i = 0; i < bytes / (long)sizeof(unsigned long); i++) count += __builtin_popcountl(mask[i]);
    return count;
}
