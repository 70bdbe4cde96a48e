// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
#include <libpq-fe.h>

/// PG_DIAG_SQLSTATE is a character macro Swift does not import.
static inline int pc_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
