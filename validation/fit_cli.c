/* fit_cli.c — `trainsim calibrate`: re-runs every fit (fit.h) on the data in
 * validation/data and prints the fitted device parameters beside the values
 * stored in platforms/catalog/ and the calibrated clusters; --check exits 1
 * when a stored value is more than 2 % away from its refit (the catalogue
 * must be what the data give), refitting from the stored values only (the
 * fits that try several starts try the others without --check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#ifndef TRAINSIM_SOURCE_DIR
#define TRAINSIM_SOURCE_DIR "."
#endif

int val_fit_cli_main(int argc, char **argv)
{
    const char *data = getenv("TRAINSIM_DATA");
    int check = 0, quiet = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else {
            fprintf(stderr, "usage: trainsim calibrate [--data DIR] [--check] [--quiet]\n"
                            "  re-fits the device parameters of platforms/catalog/ from validation/data\n");
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    char def[1024];
    if (!data) {
        snprintf(def, sizeof def, "%s/validation/data", TRAINSIM_SOURCE_DIR);
        data = def;
    }
    /* in order: fit_gemm uses the launch cost fit_memory stores */
    static int (*const FITS[])(const char *, val_fitted *, int, FILE *, sim_err *) = {
        val_fit_nccl_a100, val_fit_nvls_h100, val_fit_memory,    val_fit_gemm,
        val_fit_kernels_3090, val_fit_oases_nic, val_fit_galvatron, val_fit_flash, val_fit_overlap};
    val_fitted f[512];
    int n = 0, bad = 0;
    sim_err err;
    FILE *log = quiet ? NULL : stdout;
    val_fit_first_start_only(check);
    for (size_t i = 0; i < sizeof FITS / sizeof FITS[0]; i++) {
        int k = FITS[i](data, f + n, 512 - n, log, &err);
        if (k < 0) {
            sim_err_print("trainsim calibrate", 1, "%s", err.msg);
            return 1;
        }
        n += k;
    }
    printf("%-48s %12s %12s\n", "parameter", "fitted", "catalogue");
    for (int i = 0; i < n; i++) {
        double rel = fabs(f[i].value - f[i].stored) / fmax(fabs(f[i].value), 1e-12);
        int off = !(rel <= 0.02);
        bad += off;
        printf("%-48s %12.4g %12.4g %s%s\n", f[i].name, f[i].value, f[i].stored, f[i].unit, off ? "  DIFFERS" : "");
    }
    if (check && bad) {
        fprintf(stderr, "trainsim calibrate: %d stored parameter(s) differ from their refit by more than 2 %%\n", bad);
        return 1;
    }
    return 0;
}
