/*
 * The part of librdkafka's stable public C API the native reader uses, declared here because no librdkafka
 * headers are installed where the package is built: the library itself is loaded at run time (dlopen) from the
 * copy confluent-kafka's wheel ships, or a system librdkafka.so.1.
 *
 * Struct layouts and signatures follow librdkafka's rdkafka.h (unchanged since 1.x; the reader requires >= 1.6
 * for incremental assignment). Only the fields and functions used are declared; every other type is opaque.
 */
#ifndef SAMZA_RDKAFKA_SUBSET_H
#define SAMZA_RDKAFKA_SUBSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_error_s rd_kafka_error_t;

typedef int rd_kafka_resp_err_t; /* an enum in rdkafka.h: int-sized */

#define RD_KAFKA_RESP_ERR_NO_ERROR 0
#define RD_KAFKA_RESP_ERR__PARTITION_EOF (-191)
#define RD_KAFKA_CONSUMER 1
#define RD_KAFKA_CONF_OK 0
#define RD_KAFKA_OFFSET_INVALID (-1001)

typedef struct rd_kafka_message_s {
    rd_kafka_resp_err_t err; /* non-zero: an error event, payload holds its description */
    rd_kafka_topic_t *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} rd_kafka_message_t;

typedef struct rd_kafka_topic_partition_s {
    char *topic;
    int32_t partition;
    int64_t offset;
    void *metadata;
    size_t metadata_size;
    void *opaque;
    rd_kafka_resp_err_t err;
    void *_private;
} rd_kafka_topic_partition_t;

typedef struct rd_kafka_topic_partition_list_s {
    int cnt;
    int size;
    rd_kafka_topic_partition_t *elems;
} rd_kafka_topic_partition_list_t;

typedef struct rd_kafka_metadata_partition {
    int32_t id;
    rd_kafka_resp_err_t err;
    int32_t leader;
    int replica_cnt;
    int32_t *replicas;
    int isr_cnt;
    int32_t *isrs;
} rd_kafka_metadata_partition_t;

typedef struct rd_kafka_metadata_topic {
    char *topic;
    int partition_cnt;
    struct rd_kafka_metadata_partition *partitions;
    rd_kafka_resp_err_t err;
} rd_kafka_metadata_topic_t;

typedef struct rd_kafka_metadata {
    int broker_cnt;
    void *brokers;
    int topic_cnt;
    struct rd_kafka_metadata_topic *topics;
    int32_t orig_broker_id;
    char *orig_broker_name;
} rd_kafka_metadata_t;

/* X(return type, name, parameter list): every function resolved with dlsym, in one list. */
#define SAMZA_RDKAFKA_FUNCTIONS(X)                                                                              \
    X(int, rd_kafka_version, (void))                                                                            \
    X(const char *, rd_kafka_err2str, (rd_kafka_resp_err_t))                                                    \
    X(rd_kafka_conf_t *, rd_kafka_conf_new, (void))                                                             \
    X(int, rd_kafka_conf_set, (rd_kafka_conf_t *, const char *, const char *, char *, size_t))                  \
    X(void, rd_kafka_conf_destroy, (rd_kafka_conf_t *))                                                         \
    X(void, rd_kafka_conf_set_opaque, (rd_kafka_conf_t *, void *))                                              \
    X(void, rd_kafka_conf_set_log_cb,                                                                           \
      (rd_kafka_conf_t *, void (*)(const rd_kafka_t *, int, const char *, const char *)))                       \
    X(void *, rd_kafka_opaque, (const rd_kafka_t *))                                                            \
    X(rd_kafka_t *, rd_kafka_new, (int, rd_kafka_conf_t *, char *, size_t))                                     \
    X(void, rd_kafka_destroy, (rd_kafka_t *))                                                                   \
    X(rd_kafka_resp_err_t, rd_kafka_consumer_close, (rd_kafka_t *))                                             \
    X(rd_kafka_resp_err_t, rd_kafka_poll_set_consumer, (rd_kafka_t *))                                          \
    X(rd_kafka_queue_t *, rd_kafka_queue_get_consumer, (rd_kafka_t *))                                          \
    X(void, rd_kafka_queue_destroy, (rd_kafka_queue_t *))                                                       \
    X(ssize_t, rd_kafka_consume_batch_queue, (rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t))          \
    X(void, rd_kafka_message_destroy, (rd_kafka_message_t *))                                                   \
    X(int64_t, rd_kafka_message_timestamp, (const rd_kafka_message_t *, int *))                                 \
    X(rd_kafka_resp_err_t, rd_kafka_message_headers, (const rd_kafka_message_t *, rd_kafka_headers_t **))       \
    X(size_t, rd_kafka_header_cnt, (const rd_kafka_headers_t *))                                                \
    X(rd_kafka_resp_err_t, rd_kafka_header_get_all,                                                             \
      (const rd_kafka_headers_t *, size_t, const char **, const void **, size_t *))                             \
    X(const char *, rd_kafka_topic_name, (const rd_kafka_topic_t *))                                            \
    X(rd_kafka_topic_t *, rd_kafka_topic_new, (rd_kafka_t *, const char *, rd_kafka_topic_conf_t *))            \
    X(void, rd_kafka_topic_destroy, (rd_kafka_topic_t *))                                                       \
    X(rd_kafka_topic_partition_list_t *, rd_kafka_topic_partition_list_new, (int))                              \
    X(rd_kafka_topic_partition_t *, rd_kafka_topic_partition_list_add,                                          \
      (rd_kafka_topic_partition_list_t *, const char *, int32_t))                                               \
    X(void, rd_kafka_topic_partition_list_destroy, (rd_kafka_topic_partition_list_t *))                         \
    X(rd_kafka_resp_err_t, rd_kafka_assign, (rd_kafka_t *, const rd_kafka_topic_partition_list_t *))            \
    X(rd_kafka_error_t *, rd_kafka_incremental_assign, (rd_kafka_t *, const rd_kafka_topic_partition_list_t *)) \
    X(rd_kafka_error_t *, rd_kafka_incremental_unassign,                                                        \
      (rd_kafka_t *, const rd_kafka_topic_partition_list_t *))                                                  \
    X(const char *, rd_kafka_error_string, (const rd_kafka_error_t *))                                          \
    X(void, rd_kafka_error_destroy, (rd_kafka_error_t *))                                                       \
    X(rd_kafka_resp_err_t, rd_kafka_assignment, (rd_kafka_t *, rd_kafka_topic_partition_list_t **))             \
    X(rd_kafka_resp_err_t, rd_kafka_pause_partitions, (rd_kafka_t *, rd_kafka_topic_partition_list_t *))        \
    X(rd_kafka_resp_err_t, rd_kafka_resume_partitions, (rd_kafka_t *, rd_kafka_topic_partition_list_t *))       \
    X(rd_kafka_resp_err_t, rd_kafka_position, (rd_kafka_t *, rd_kafka_topic_partition_list_t *))                \
    X(rd_kafka_resp_err_t, rd_kafka_query_watermark_offsets,                                                    \
      (rd_kafka_t *, const char *, int32_t, int64_t *, int64_t *, int))                                         \
    X(rd_kafka_resp_err_t, rd_kafka_metadata,                                                                   \
      (rd_kafka_t *, int, rd_kafka_topic_t *, const rd_kafka_metadata_t **, int))                               \
    X(void, rd_kafka_metadata_destroy, (const rd_kafka_metadata_t *))

#endif
