/* Harness arithmetic and inputs: signed error, MAPE, worst case, bias, per
 * subset; cases that cannot be compared are refused; thresholds and CSV
 * files with errors that name the file, the field or line and column. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "validation/val.h"
#include "validation/val_csv.h"

static int fails;

static void near(double got, double want, const char *what)
{
    printf("%-50s got %.12g want %.12g\n", what, got, want);
    if (fabs(got - want) > 1e-9 * (fabs(want) > 1 ? fabs(want) : 1)) {
        printf("FAIL: %s\n", what);
        fails++;
    }
}

static void check(int ok, const char *what, const char *msg)
{
    printf("%-50s %s%s%s\n", what, ok ? "ok" : "FAIL", msg ? ": " : "", msg ? msg : "");
    if (!ok)
        fails++;
}

static char *write_tmp(const char *name, const char *text)
{
    static char path[8][256];
    static int i;
    char *p = path[i++ % 8];
    snprintf(p, 256, "/tmp/trainsim-val-%d-%s", (int)getpid(), name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

int main(void)
{
    sim_err err = {{0}};
    near(val_error_pct(100, 110), 10, "error: 110 against 100");
    near(val_error_pct(200, 150), -25, "error: 150 against 200");
    val_set *s = val_set_new();
    val_add(s, "a", "one", 100, 110, "s", 1, &err);   /* +10 */
    val_add(s, "a", "two", 200, 150, "s", 2, &err);   /* -25 */
    val_add(s, "b", "three", 4, 5, "s", 3, &err);     /* +25 */
    val_add(s, NULL, "four", 10, 9.5, "s", 0, &err);  /* -5 */
    val_stats st;
    val_stats_of(s, NULL, &st);
    near(st.n, 4, "cases");
    near(st.mape, (10 + 25 + 25 + 5) / 4.0, "MAPE over all cases");
    near(st.worst, 25, "worst |error|");
    near(st.worst_index, 1, "worst case is the first with the largest error");
    near(st.bias, (10 - 25 + 25 - 5) / 4.0, "bias (mean signed error)");
    val_stats_of(s, "a", &st);
    near(st.n, 2, "subset a: cases");
    near(st.mape, 17.5, "subset a: MAPE");
    val_stats_of(s, "zzz", &st);
    near(st.n, 0, "empty subset: cases");
    near(st.worst_index, -1, "empty subset: no worst case");
    check(val_add(s, NULL, "zero", 0, 1, "s", 0, &err) < 0 && strstr(err.msg, "zero"), "measured 0 is refused",
          err.msg);
    check(val_add(s, NULL, "nan", 1, NAN, "s", 0, &err) < 0 && strstr(err.msg, "nan"), "simulated NaN is refused",
          err.msg);
    near(val_set_count(s), 4, "refused cases are not added");
    val_set_free(s);

    /* thresholds */
    val_thresholds *t = val_thresholds_load(
        write_tmp("t1.json", "{\"set\": \"x\", \"groups\": {\"g\": {\"mape\": 5}, \"g/s\": {\"worst\": 7.5}}}"), &err);
    check(t != NULL, "thresholds: valid file loads", t ? NULL : err.msg);
    double mm, ww;
    check(val_thresholds_get(t, "g", &mm, &ww) == 1 && mm == 5 && isnan(ww), "thresholds: g has mape 5, no worst",
          NULL);
    check(val_thresholds_get(t, "g/s", &mm, &ww) == 1 && isnan(mm) && ww == 7.5, "thresholds: g/s worst 7.5", NULL);
    check(val_thresholds_get(t, "h", &mm, &ww) == 0, "thresholds: h not recorded", NULL);
    val_thresholds_free(t);
    char *bad = write_tmp("t2.json", "{\"groups\": {\"g\": {\"mape\": \"ten\"}}}");
    t = val_thresholds_load(bad, &err);
    check(!t && strstr(err.msg, bad) && strstr(err.msg, "mape"), "thresholds: a string limit names file and field",
          err.msg);
    bad = write_tmp("t3.json", "{\"groups\": [1, 2]}");
    t = val_thresholds_load(bad, &err);
    check(!t && strstr(err.msg, bad) && strstr(err.msg, "groups"), "thresholds: groups not an object", err.msg);
    bad = write_tmp("t4.json", "{not json");
    t = val_thresholds_load(bad, &err);
    check(!t && strstr(err.msg, bad), "thresholds: not JSON names the file", err.msg);

    /* CSV reader */
    char *csvp = write_tmp("a.csv", "x,y,\"name, quoted\"\n1,2.5,\"a \"\"b\"\"\"\n3,oops,c\n");
    val_csv *c = val_csv_load(csvp, &err);
    check(c != NULL, "csv: loads", c ? NULL : err.msg);
    if (c) {
        double v;
        near(val_csv_rows(c), 2, "csv: rows");
        int cy = val_csv_col(c, "y", &err), cq = val_csv_col(c, "name, quoted", &err);
        check(cy == 1 && cq == 2, "csv: quoted header", NULL);
        check(val_csv_num(c, 0, cy, &v, &err) == 0 && v == 2.5, "csv: number", NULL);
        check(!strcmp(val_csv_str(c, 0, cq), "a \"b\""), "csv: quoted field with quotes", val_csv_str(c, 0, cq));
        check(val_csv_num(c, 1, cy, &v, &err) < 0 && strstr(err.msg, csvp) && strstr(err.msg, "line 3") &&
                  strstr(err.msg, "\"y\""),
              "csv: bad number names file, line and column", err.msg);
        check(val_csv_col(c, "nope", &err) < 0 && strstr(err.msg, "nope"), "csv: missing column named", err.msg);
        val_csv_free(c);
    }
    check(!val_csv_load("/nonexistent/x.csv", &err) && strstr(err.msg, "/nonexistent/x.csv"),
          "csv: missing file named", err.msg);
    printf("%s\n", fails ? "FAILED" : "harness arithmetic ok");
    return fails != 0;
}
