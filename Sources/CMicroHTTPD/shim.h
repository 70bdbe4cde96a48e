// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>

/// MHD_start_daemon is C-variadic: this fixed-argument wrapper passes the options push-connector
/// uses. `address` (may be NULL: all interfaces) selects the interface; `thread_pool` > 1 adds
/// MHD_OPTION_THREAD_POOL_SIZE (then flags must not contain MHD_USE_THREAD_PER_CONNECTION).
static inline struct MHD_Daemon *pc_mhd_start_daemon(unsigned int flags, uint16_t port,
    const struct sockaddr *address, unsigned int thread_pool, unsigned int connection_limit,
    unsigned int timeout_seconds, MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context) {
    if (thread_pool > 1) {
        return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
            MHD_OPTION_SOCK_ADDR, address,
            MHD_OPTION_THREAD_POOL_SIZE, thread_pool,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_END);
}

/// The port a daemon listens on (useful after binding port 0); 0 when unknown.
static inline uint16_t pc_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
