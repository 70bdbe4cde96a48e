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
/// `per_ip_limit` > 0 caps the connections of one client address; `notify` (may be NULL) is told
/// of every connection opened and closed.
static inline struct MHD_Daemon *pc_mhd_start_daemon(unsigned int flags, uint16_t port,
    const struct sockaddr *address, unsigned int thread_pool, unsigned int connection_limit,
    unsigned int per_ip_limit, unsigned int timeout_seconds, MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_NotifyConnectionCallback notify, void *notify_context) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool > 1 ? thread_pool : 0,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
        MHD_OPTION_END);
}

/// The socket of a connection (-1 when unknown).
static inline int pc_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// The port a daemon listens on (useful after binding port 0); 0 when unknown.
static inline uint16_t pc_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
