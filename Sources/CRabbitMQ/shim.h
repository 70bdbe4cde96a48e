// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
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
