/* val_csv.h — a small reader for the comma-separated data sets in
 * validation/data (a header line, then rows; double-quoted fields allowed).
 * Errors name the file, the line and the column. */
#ifndef VAL_CSV_H
#define VAL_CSV_H

#include "sim/error.h"

typedef struct val_csv val_csv;

val_csv *val_csv_load(const char *path, sim_err *err);
/* Loads data_dir/rel of a validation context (val.h). */
struct val_ctx;
val_csv *val_csv_load_data(const struct val_ctx *ctx, const char *rel, sim_err *err);
void val_csv_free(val_csv *c);
int val_csv_rows(const val_csv *c);
/* Column index of a header name, or -1 with a message naming the file. */
int val_csv_col(const val_csv *c, const char *name, sim_err *err);
/* The file's path and a row's line in it (0 when out of range), for errors
 * about values that are numbers but not valid ones. */
const char *val_csv_path(const val_csv *c);
int val_csv_line(const val_csv *c, int row);
/* Field text ("" when the row is short). */
const char *val_csv_str(const val_csv *c, int row, int col);
/* Field as a number; -1 with "FILE: line L, column NAME: expected a number, got \"…\"". */
int val_csv_num(const val_csv *c, int row, int col, double *out, sim_err *err);

#endif
