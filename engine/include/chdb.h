/*
 * chingest's declaration of the libchdb C ABI (engine 26.7.3), written for this
 * project from the engine's published API facts. It declares only what
 * chdb-rust 2.0.0 calls and what libchdb.so 26.7.3-stable.1 exports; no
 * deprecated entry points. bindgen reads this through CHDB_INCLUDE_DIR.
 *
 * Conventions of the ABI:
 *  - every handle is a pointer to a one-word struct the engine owns;
 *  - strings passed with an explicit length need no NUL terminator;
 *  - every chdb_result returned must be released with chdb_destroy_query_result,
 *    including error results (check chdb_result_error first).
 */
#ifndef CHINGEST_CHDB_ABI_H
#define CHINGEST_CHDB_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Outcome of calls that return no result handle. */
typedef enum chdb_state {
    CHDBSuccess = 0,
    CHDBError = 1
} chdb_state;

/* Opaque handles. */
typedef struct chdb_result_ { void *internal_data; } chdb_result;
typedef struct chdb_connection_ { void *internal_data; } *chdb_connection;
typedef struct chdb_arrow_stream_ { void *internal_data; } *chdb_arrow_stream;
typedef struct chdb_arrow_schema_ { void *internal_data; } *chdb_arrow_schema;
typedef struct chdb_arrow_array_ { void *internal_data; } *chdb_arrow_array;
typedef struct chdb_insert_stream_ { void *internal_data; } *chdb_insert_stream;

/* Type-mapping switches for Arrow export; each is 0 or 1. */
typedef struct chdb_arrow_options {
    int unsupported_as_binary;
    int low_cardinality_as_dictionary;
    int string_as_string;
} chdb_arrow_options;

/* Engine release, e.g. "26.7.3". */
const char *chdb_version(void);

/* Connections. argv follows the clickhouse-local command line
 * (argv[0] is a program name, "--path=DIR" binds the data directory).
 * The returned pointer is freed by chdb_close_conn; NULL on failure. */
chdb_connection *chdb_connect(int argc, char **argv);
void chdb_close_conn(chdb_connection *conn);

/* Buffered queries. */
chdb_result *chdb_query(chdb_connection conn, const char *query, const char *format);
chdb_result *chdb_query_n(chdb_connection conn, const char *query, size_t query_len,
                          const char *format, size_t format_len);
chdb_result *chdb_query_cmdline(int argc, char **argv);
chdb_result *chdb_query_with_params(chdb_connection conn, const char *query,
                                    const char *format,
                                    const char *const *param_names,
                                    const char *const *param_values,
                                    size_t param_count);
chdb_result *chdb_query_with_params_n(chdb_connection conn, const char *query,
                                      size_t query_len, const char *format,
                                      size_t format_len,
                                      const char *const *param_names,
                                      const size_t *param_name_lens,
                                      const char *const *param_values,
                                      const size_t *param_value_lens,
                                      size_t param_count);

/* Streaming queries: start, fetch chunks until an empty one, then destroy. */
chdb_result *chdb_stream_query(chdb_connection conn, const char *query, const char *format);
chdb_result *chdb_stream_query_n(chdb_connection conn, const char *query, size_t query_len,
                                 const char *format, size_t format_len);
chdb_result *chdb_stream_query_with_params(chdb_connection conn, const char *query,
                                           const char *format,
                                           const char *const *param_names,
                                           const char *const *param_values,
                                           size_t param_count);
chdb_result *chdb_stream_query_with_params_n(chdb_connection conn, const char *query,
                                             size_t query_len, const char *format,
                                             size_t format_len,
                                             const char *const *param_names,
                                             const size_t *param_name_lens,
                                             const char *const *param_values,
                                             const size_t *param_value_lens,
                                             size_t param_count);
chdb_result *chdb_stream_fetch_result(chdb_connection conn, chdb_result *result);
void chdb_stream_cancel_query(chdb_connection conn, chdb_result *result);
void chdb_destroy_query_result(chdb_result *result);

/* Streaming INSERT: begin with a statement lacking FORMAT/data, append chunks,
 * then done (commit) or cancel; always destroy the handle. */
chdb_insert_stream chdb_stream_insert(chdb_connection conn, const char *query, const char *format);
chdb_insert_stream chdb_stream_insert_n(chdb_connection conn, const char *query,
                                        size_t query_len, const char *format,
                                        size_t format_len);
chdb_insert_stream chdb_stream_insert_with_params(chdb_connection conn, const char *query,
                                                  const char *format,
                                                  const char *const *param_names,
                                                  const char *const *param_values,
                                                  size_t param_count);
chdb_insert_stream chdb_stream_insert_with_params_n(chdb_connection conn, const char *query,
                                                    size_t query_len, const char *format,
                                                    size_t format_len,
                                                    const char *const *param_names,
                                                    const size_t *param_name_lens,
                                                    const char *const *param_values,
                                                    const size_t *param_value_lens,
                                                    size_t param_count);
chdb_state chdb_stream_append(chdb_insert_stream stream, const void *data, size_t len);
chdb_result *chdb_stream_done(chdb_insert_stream stream);
void chdb_stream_cancel_insert(chdb_insert_stream stream);
const char *chdb_stream_insert_error(chdb_insert_stream stream);
void chdb_destroy_insert_stream(chdb_insert_stream stream);

/* Result accessors. */
char *chdb_result_buffer(chdb_result *result);
size_t chdb_result_length(chdb_result *result);
double chdb_result_elapsed(chdb_result *result);
uint64_t chdb_result_rows_read(chdb_result *result);
uint64_t chdb_result_bytes_read(chdb_result *result);
uint64_t chdb_result_storage_rows_read(chdb_result *result);
uint64_t chdb_result_storage_bytes_read(chdb_result *result);
uint64_t chdb_result_rows_written(chdb_result *result);
uint64_t chdb_result_bytes_written(chdb_result *result);
const char *chdb_result_error(chdb_result *result);

/* Arrow C Data Interface. out_stream / out_batch point at caller-allocated
 * ArrowArrayStream structs; options may be NULL for the defaults. */
chdb_result *chdb_query_arrow(chdb_connection conn, const char *query,
                              chdb_arrow_stream out_stream,
                              const chdb_arrow_options *options);
chdb_result *chdb_query_arrow_n(chdb_connection conn, const char *query, size_t query_len,
                                chdb_arrow_stream out_stream,
                                const chdb_arrow_options *options);
chdb_result *chdb_stream_query_arrow(chdb_connection conn, const char *query,
                                     const chdb_arrow_options *options);
chdb_result *chdb_stream_query_arrow_n(chdb_connection conn, const char *query,
                                       size_t query_len,
                                       const chdb_arrow_options *options);
chdb_result *chdb_stream_query_arrow_with_params(chdb_connection conn, const char *query,
                                                 const chdb_arrow_options *options,
                                                 const char *const *param_names,
                                                 const char *const *param_values,
                                                 size_t param_count);
chdb_result *chdb_stream_query_arrow_with_params_n(chdb_connection conn, const char *query,
                                                   size_t query_len,
                                                   const chdb_arrow_options *options,
                                                   const char *const *param_names,
                                                   const size_t *param_name_lens,
                                                   const char *const *param_values,
                                                   const size_t *param_value_lens,
                                                   size_t param_count);
chdb_state chdb_stream_fetch_arrow(chdb_connection conn, chdb_result *stream_result,
                                   chdb_arrow_stream out_batch);

/* Register an Arrow stream, or one schema+array pair, as a named table
 * function readable by the next statements on this connection. */
chdb_state chdb_arrow_scan(chdb_connection conn, const char *table_name,
                           chdb_arrow_stream arrow_stream);
chdb_state chdb_arrow_array_scan(chdb_connection conn, const char *table_name,
                                 chdb_arrow_schema arrow_schema,
                                 chdb_arrow_array arrow_array);
chdb_state chdb_arrow_unregister_table(chdb_connection conn, const char *table_name);

/* Management ABI (chdb-core >= 26.7.2, "Durable V1"): chdb-rust compiles its
 * `admin` module (Connection::classify_query) only when all three are declared.
 * chingest calls only chdb_classify_query_n: it parses the text with the
 * connection's own parser and settings and executes nothing. */
typedef enum chdb_query_class {
    CHDB_QUERY_READ_ONLY = 0,
    CHDB_QUERY_MUTATING = 1,
    CHDB_QUERY_MUTATING_GLOBAL = 2,
    CHDB_QUERY_CONTROL = 3,
    CHDB_QUERY_UNKNOWN = 4
} chdb_query_class;

typedef enum chdb_query_analysis_flag {
    CHDB_QUERY_HAS_SECRETS = 1,
    CHDB_QUERY_WRITES_ONLY_TARGET_DATABASE = 2,
    CHDB_QUERY_CHANGES_DATABASE_LIFECYCLE = 4
} chdb_query_analysis_flag;

/* Versioned by struct_size: the caller sets it to sizeof before the call. */
typedef struct chdb_query_analysis_v1 {
    uint32_t struct_size;
    uint32_t statement_count;
    uint32_t flags;
    uint32_t query_class;
} chdb_query_analysis_v1;

/* Unparsable text is a success with CHDB_QUERY_UNKNOWN and statement_count 0. */
chdb_state chdb_classify_query_n(chdb_connection conn, const char *query, size_t query_len,
                                 const char *target_database, size_t target_database_len,
                                 chdb_query_analysis_v1 *out);
chdb_result *chdb_backup_database_n(chdb_connection conn, const char *database,
                                    size_t database_len, const char *path, size_t path_len,
                                    const char *base_path, size_t base_path_len);
chdb_result *chdb_restore_database_n(chdb_connection conn, const char *database,
                                     size_t database_len, const char *path, size_t path_len);

/* Process-wide runtime. Disabling signal handlers must precede chdb_connect
 * for the host to keep its own SIGINT/SIGTERM handling. */
void chdb_set_signal_handlers_enabled(int enabled);
void chdb_reset_signal_handlers(void);
/* Joins every engine thread; fails while any connection is open. */
chdb_state chdb_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* CHINGEST_CHDB_ABI_H */
