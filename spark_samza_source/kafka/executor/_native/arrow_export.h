/*
 * Arrow C Data Interface (https://arrow.apache.org/docs/format/CDataInterface.html): the ArrowArray struct the
 * native reader fills and pyarrow imports (RecordBatch._import_from_c), plus small builders for the column kinds
 * of the samza-kafka schema. The struct layout is fixed by the Arrow specification (ABI-stable).
 */
#ifndef SAMZA_ARROW_EXPORT_H
#define SAMZA_ARROW_EXPORT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

/* What one exported array owns: its buffers (freed on release) and its children's structs. */
typedef struct {
    const void *buffers[3];
    struct ArrowArray *kids;
    struct ArrowArray **kid_ptrs;
    int64_t n_kids;
} arrow_node;

static void arrow_release(struct ArrowArray *array) {
    arrow_node *node = (arrow_node *)array->private_data;
    if (node != NULL) {
        for (int64_t i = 0; i < node->n_kids; i++) {
            struct ArrowArray *kid = &node->kids[i];
            if (kid->release != NULL) kid->release(kid); /* a child the consumer moved out is already released */
        }
        for (int i = 0; i < 3; i++) free((void *)node->buffers[i]);
        free(node->kids);
        free(node->kid_ptrs);
        free(node);
    }
    array->release = NULL;
    array->private_data = NULL;
}

/* Initialise ``array`` as an empty node with ``n_buffers`` buffer slots and ``n_kids`` children; 0 on success.
 * Released with arrow_release even when later filling fails, so every allocation is attached at once. */
static int arrow_init(struct ArrowArray *array, int64_t length, int64_t n_buffers, int64_t n_kids) {
    memset(array, 0, sizeof(*array));
    arrow_node *node = (arrow_node *)calloc(1, sizeof(arrow_node));
    if (node == NULL) return -1;
    array->private_data = node;
    array->release = arrow_release;
    array->length = length;
    array->n_buffers = n_buffers;
    array->buffers = node->buffers;
    if (n_kids > 0) {
        node->kids = (struct ArrowArray *)calloc((size_t)n_kids, sizeof(struct ArrowArray));
        node->kid_ptrs = (struct ArrowArray **)calloc((size_t)n_kids, sizeof(struct ArrowArray *));
        if (node->kids == NULL || node->kid_ptrs == NULL) return -1;
        node->n_kids = n_kids;
        for (int64_t i = 0; i < n_kids; i++) node->kid_ptrs[i] = &node->kids[i];
        array->n_children = n_kids;
        array->children = node->kid_ptrs;
    }
    return 0;
}

/* A zeroed buffer of ``size`` bytes (at least 1: pyarrow wants a pointer even for empty buffers) owned by
 * ``array`` in slot ``i``. */
static void *arrow_buffer(struct ArrowArray *array, int i, size_t size) {
    void *mem = calloc(size > 0 ? size : 1, 1);
    ((arrow_node *)array->private_data)->buffers[i] = mem;
    return mem;
}

static struct ArrowArray *arrow_child(struct ArrowArray *array, int64_t i) { return array->children[i]; }

/* A column of ``n`` copies of one fixed-width value (int32 / int64). */
static int arrow_fill_fixed(struct ArrowArray *array, int64_t n, const void *value, size_t width) {
    if (arrow_init(array, n, 2, 0) != 0) return -1;
    char *data = (char *)arrow_buffer(array, 1, (size_t)n * width);
    if (data == NULL) return -1;
    for (int64_t i = 0; i < n; i++) memcpy(data + i * width, value, width);
    return 0;
}

/* A string column of ``n`` copies of ``text``. */
static int arrow_fill_repeated_string(struct ArrowArray *array, int64_t n, const char *text, size_t len) {
    if ((int64_t)len * n > INT32_MAX) return -1;
    if (arrow_init(array, n, 3, 0) != 0) return -1;
    int32_t *offsets = (int32_t *)arrow_buffer(array, 1, (size_t)(n + 1) * sizeof(int32_t));
    char *data = (char *)arrow_buffer(array, 2, len * (size_t)n);
    if (offsets == NULL || data == NULL) return -1;
    for (int64_t i = 0; i < n; i++) {
        offsets[i] = (int32_t)(i * (int64_t)len);
        memcpy(data + i * len, text, len);
    }
    offsets[n] = (int32_t)(n * (int64_t)len);
    return 0;
}

static void arrow_set_valid(uint8_t *bitmap, int64_t i) { bitmap[i >> 3] |= (uint8_t)(1u << (i & 7)); }

#endif
