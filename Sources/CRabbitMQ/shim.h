// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
#include <sys/types.h>
#include <stdint.h>
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>

// amqp_login / amqp_login_with_properties are C-variadic: PLAIN-SASL wrappers.
static inline amqp_rpc_reply_t pc_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
        int channel_max, int frame_max, int heartbeat, const char *user, const char *password) {
    return amqp_login(state, vhost, channel_max, frame_max, heartbeat, AMQP_SASL_METHOD_PLAIN, user, password);
}
static inline amqp_rpc_reply_t pc_amqp_login_plain_with_properties(amqp_connection_state_t state,
        const char *vhost, int channel_max, int frame_max, int heartbeat,
        const amqp_table_t *properties, const char *user, const char *password) {
    return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                      AMQP_SASL_METHOD_PLAIN, user, password);
}

// librabbitmq exports no write of raw bytes that returns when the socket is full:
// amqp_send_frame writes one frame and waits until it is all written. Its socket object starts
// with a table of functions whose first entry is that socket's own send: send(2) with the flags
// given for TCP; SSL_write for TLS (partial-write mode, on the non-blocking socket), answering
// PC_AMQP_STATUS_NEEDWRITE / _NEEDREAD where the socket is full (or TLS must read first).
// The layout mirrors struct amqp_socket_class_t / amqp_socket_t_ of librabbitmq/amqp_socket.h,
// unchanged from 0.7 through 0.16 (0.5 and 0.6 began with writev); SSL_MODE_ENABLE_PARTIAL_WRITE
// is set from 0.11. pc_amqp_socket_layout_known() says whether the library in use is 0.11 to
// 0.16 (callers fall back to amqp_send_frame otherwise). docs/decisions/0090.
typedef ssize_t (*pc_amqp_socket_send_fn)(void *socket, const void *buf, size_t len, int flags);
struct pc_amqp_socket_class { pc_amqp_socket_send_fn send; };
struct pc_amqp_socket { const struct pc_amqp_socket_class *klass; };
static const ssize_t PC_AMQP_STATUS_NEEDREAD = -0x1301;
static const ssize_t PC_AMQP_STATUS_NEEDWRITE = -0x1302;

static inline int pc_amqp_socket_layout_known(void) {
    uint32_t v = amqp_version_number();  // 0xMMmmpp0r
    uint32_t major = v >> 24, minor = (v >> 16) & 0xff;
    return major == 0 && minor >= 11 && minor <= 16;
}
static inline ssize_t pc_amqp_socket_send(amqp_socket_t *socket, const void *buf, size_t len, int flags) {
    const struct pc_amqp_socket *s = (const struct pc_amqp_socket *)socket;
    return s->klass->send(socket, buf, len, flags);
}
