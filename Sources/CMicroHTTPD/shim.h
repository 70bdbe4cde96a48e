// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>
