// Swift face of Linux process controls that Swift cannot call directly (C-variadic prctl).
#pragma once
#include <sys/prctl.h>

/// prctl(PR_SET_DUMPABLE, value): 0 forbids core dumps and ptrace attach by other users, and
/// makes /proc/<pid> files owned by root.
static inline int pc_set_dumpable(int value) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)value, 0UL, 0UL, 0UL);
}
