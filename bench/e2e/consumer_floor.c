/*
 * consumer_floor: the broker work of a send worker and nothing else, in C on rabbitmq-c.
 *
 * Consumes COUNT messages from QUEUE (basic.qos PREFETCH, manual acks) and, for each one,
 * publishes RESULTS results (one per recipient) of RESULT_BYTES bytes to EXCHANGE with
 * ROUTING_KEY on a confirm-mode channel of the same connection. Confirms are read as a stream, in whatever frames the broker
 * sends, and each confirm (single or `multiple`) settles the deliveries it covers with one
 * basic.ack carrying `multiple`. RESULTS publishes per delivery in delivery order make publish
 * sequence number N belong to delivery tag ceil(N / RESULTS), so no map is needed.
 *
 *   consumer_floor HOST PORT USER PASSWORD VHOST QUEUE EXCHANGE ROUTING_KEY COUNT PREFETCH RESULT_BYTES RESULTS
 *
 * Prints one line: `consumed=N confirmed=N nacked=N seconds=S cpu_seconds=C`. Exit 1 on a
 * broker error or a nack.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static void die_on_reply(amqp_rpc_reply_t reply, const char *what) {
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return;
    fprintf(stderr, "consumer_floor: %s failed (reply type %d, library error %s)\n", what, reply.reply_type,
            amqp_error_string2(reply.library_error));
    exit(1);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec +
           (double)usage.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 13) {
        fprintf(stderr, "usage: consumer_floor HOST PORT USER PASSWORD VHOST QUEUE EXCHANGE ROUTING_KEY COUNT PREFETCH RESULT_BYTES RESULTS\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    const char *user = argv[3], *password = argv[4], *vhost = argv[5];
    const char *queue = argv[6], *exchange = argv[7], *routing_key = argv[8];
    uint64_t count = strtoull(argv[9], NULL, 10);
    int prefetch = atoi(argv[10]);
    size_t result_bytes = (size_t)strtoul(argv[11], NULL, 10);
    uint64_t per = strtoull(argv[12], NULL, 10);
    if (count == 0 || prefetch <= 0 || prefetch > 65535 || result_bytes == 0 || per == 0) {
        fprintf(stderr, "consumer_floor: COUNT, PREFETCH (1-65535), RESULT_BYTES and RESULTS must be positive\n");
        return 2;
    }

    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(conn);
    if (!socket || amqp_socket_open(socket, host, port) != AMQP_STATUS_OK) {
        fprintf(stderr, "consumer_floor: cannot connect to %s:%d\n", host, port);
        return 1;
    }
    die_on_reply(amqp_login(conn, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user, password), "login");
    const amqp_channel_t consume = 1, publish = 2;
    amqp_channel_open(conn, consume);
    die_on_reply(amqp_get_rpc_reply(conn), "channel.open (consume)");
    amqp_channel_open(conn, publish);
    die_on_reply(amqp_get_rpc_reply(conn), "channel.open (publish)");
    amqp_confirm_select(conn, publish);
    die_on_reply(amqp_get_rpc_reply(conn), "confirm.select");
    amqp_basic_qos(conn, consume, 0, (uint16_t)prefetch, 0);
    die_on_reply(amqp_get_rpc_reply(conn), "basic.qos");
    amqp_basic_consume(conn, consume, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    die_on_reply(amqp_get_rpc_reply(conn), "basic.consume");

    char *result = malloc(result_bytes);
    memset(result, 'r', result_bytes);
    result[0] = '{';
    result[result_bytes - 1] = '}';
    amqp_bytes_t body = {.len = result_bytes, .bytes = result};
    amqp_basic_properties_t properties = {0};
    properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    properties.content_type = amqp_cstring_bytes("application/json");
    properties.delivery_mode = 2;

    uint64_t consumed = 0, confirmed = 0, nacked = 0, acked = 0;
    double started = 0, cpu_started = 0;
    while (confirmed < count) {
        amqp_frame_t frame;
        int status = amqp_simple_wait_frame(conn, &frame);
        if (status != AMQP_STATUS_OK) {
            fprintf(stderr, "consumer_floor: reading a frame failed: %s\n", amqp_error_string2(status));
            return 1;
        }
        if (frame.frame_type != AMQP_FRAME_METHOD) continue;
        switch (frame.payload.method.id) {
        case AMQP_BASIC_DELIVER_METHOD: {
            if (consumed == 0) { started = now_seconds(); cpu_started = cpu_seconds(); }
            amqp_message_t message;
            die_on_reply(amqp_read_message(conn, frame.channel, &message, 0), "reading a delivery");
            amqp_destroy_message(&message);
            if (consumed == count) break; /* beyond COUNT: left unacked, requeued at close */
            consumed++;
            for (uint64_t r = 0; r < per; r++) {
                if (amqp_basic_publish(conn, publish, amqp_cstring_bytes(exchange), amqp_cstring_bytes(routing_key), 0, 0,
                                       &properties, body) != AMQP_STATUS_OK) {
                    fprintf(stderr, "consumer_floor: publish failed\n");
                    return 1;
                }
            }
            break;
        }
        case AMQP_BASIC_ACK_METHOD: {
            amqp_basic_ack_t *ack = frame.payload.method.decoded;
            uint64_t settled = ack->delivery_tag / per; /* deliveries whose every result is confirmed */
            if (settled > acked) {
                amqp_basic_ack(conn, consume, settled, 1);
                acked = settled;
                confirmed = settled;
            }
            break;
        }
        case AMQP_BASIC_NACK_METHOD: {
            amqp_basic_nack_t *nack = frame.payload.method.decoded;
            nacked += 1;
            confirmed = nack->delivery_tag / per;
            break;
        }
        case AMQP_CHANNEL_CLOSE_METHOD:
        case AMQP_CONNECTION_CLOSE_METHOD:
            fprintf(stderr, "consumer_floor: the broker closed the channel or connection\n");
            return 1;
        default:
            break;
        }
    }
    double seconds = now_seconds() - started, cpu = cpu_seconds() - cpu_started;
    printf("consumed=%llu confirmed=%llu nacked=%llu seconds=%.3f cpu_seconds=%.3f\n", (unsigned long long)consumed,
           (unsigned long long)confirmed, (unsigned long long)nacked, seconds, cpu);
    amqp_channel_close(conn, publish, AMQP_REPLY_SUCCESS);
    amqp_channel_close(conn, consume, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    free(result);
    return nacked ? 1 : 0;
}
