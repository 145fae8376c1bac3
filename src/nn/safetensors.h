/* Inside the nn layer: a reader and writer of safetensors files of F32
 * tensors (https://github.com/huggingface/safetensors, "Format"): 8 bytes of
 * little-endian header length N, N bytes of JSON header (padded with spaces to
 * a multiple of 8), then the raw little-endian tensor bytes. Zeroth adds a
 * hash of the data bytes to the metadata so that corruption is refused. */
#ifndef ZT_NN_SAFETENSORS_H
#define ZT_NN_SAFETENSORS_H

#include <stddef.h>

#include "core/status.h"

typedef struct zt_st_tensor {
    const char *name;
    int ndim;
    int shape[4];
    const float *data; /* count = product of shape */
} zt_st_tensor;

typedef struct zt_st_meta {
    const char *key;
    const char *value;
} zt_st_meta;

/* Atomically writes the tensors (in the order given) and metadata. */
zt_status zt_st_write(const char *path, const zt_st_tensor *tensors, int n, const zt_st_meta *meta,
                      int nmeta);

/* A file read whole and checked: header well formed, every tensor F32 with
 * offsets that tile the data exactly, data hash matching. */
typedef struct zt_st_entry {
    char *name;
    int ndim;
    int shape[4];
    size_t begin, end; /* byte offsets in the data section */
} zt_st_entry;

typedef struct zt_st_file {
    char *path;
    char *bytes;
    size_t len;
    const unsigned char *data; /* the data section */
    zt_st_entry *entries;
    int nentries;
    char **meta_keys;
    char **meta_values;
    int nmeta;
} zt_st_file;

zt_status zt_st_open(const char *path, zt_st_file *f);
void zt_st_close(zt_st_file *f);
/* The metadata value of `key`, or NULL. */
const char *zt_st_meta_get(const zt_st_file *f, const char *key);
/* The entry called `name`, or NULL. */
const zt_st_entry *zt_st_find(const zt_st_file *f, const char *name);
/* Checks that `name` exists with exactly this shape (else a one-line
 * ZT_ERR_INVALID naming the tensor) and holds only finite values (else
 * ZT_ERR_CORRUPT naming it); copies its values into out when not NULL. */
zt_status zt_st_read_tensor(const zt_st_file *f, const char *name, int ndim, const int *shape,
                            float *out);

#endif
