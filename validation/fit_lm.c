/* fit_lm.c — the least-squares driver every calibration uses (fit.h):
 * GSL's trust-region nonlinear least squares with Levenberg-Marquardt steps
 * and a finite-difference Jacobian. */
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>

#include "fit.h"

typedef struct lm_ctx {
    val_fit_fn f;
    void *user;
    int n, p, failed;
} lm_ctx;

static int lm_f(const gsl_vector *x, void *data, gsl_vector *r)
{
    lm_ctx *c = data;
    double xs[32], rs[512];
    for (int i = 0; i < c->p; i++)
        xs[i] = gsl_vector_get(x, (size_t)i);
    if (c->f(xs, rs, c->user) != 0) {
        c->failed = 1;
        return GSL_EDOM;
    }
    for (int i = 0; i < c->n; i++)
        gsl_vector_set(r, (size_t)i, isfinite(rs[i]) ? rs[i] : 1e3);
    return GSL_SUCCESS;
}

int val_fit_lm(val_fit_fn f, void *user, int n, int p, double *x, double *rms, sim_err *err)
{
    if (p > 32 || n > 512 || n < p)
        return sim_errf(err, "internal: fit of %d parameters on %d residuals", p, n);
    gsl_set_error_handler_off();
    lm_ctx c = {f, user, n, p, 0};
    gsl_multifit_nlinear_fdf fdf = {.f = lm_f, .df = NULL, .fvv = NULL, .n = (size_t)n, .p = (size_t)p, .params = &c};
    gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, (size_t)n, (size_t)p);
    gsl_vector_view x0 = gsl_vector_view_array(x, (size_t)p);
    gsl_multifit_nlinear_init(&x0.vector, &fdf, w);
    int info = 0;
    int st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
    if (c.failed) {
        gsl_multifit_nlinear_free(w);
        return sim_errf(err, "fit: the model could not be evaluated");
    }
    if (st != GSL_SUCCESS && st != GSL_EMAXITER && st != GSL_ENOPROG) {
        gsl_multifit_nlinear_free(w);
        return sim_errf(err, "fit: GSL stopped with \"%s\"", gsl_strerror(st));
    }
    gsl_vector *xs = gsl_multifit_nlinear_position(w);
    for (int i = 0; i < p; i++)
        x[i] = gsl_vector_get(xs, (size_t)i);
    double chi;
    gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), &chi);
    *rms = sqrt(chi / n);
    gsl_multifit_nlinear_free(w);
    return 0;
}
