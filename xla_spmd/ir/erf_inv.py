"""The coefficients of XLA's ``erf_inv`` expansion (Giles' single-precision polynomial), shared
by the StableHLO importer (``chlo.erf_inv``) and the frontend (``lax.erf_inv``,
``xnp.erfinv``), so that both compute the same bits.

With ``w = -log((1 - x)(1 + x))``, ``erf_inv(x) = p(w') * x``, where for ``w < 5`` the
polynomial has coefficients `ERF_INV_SMALL` and ``w' = w - 2.5``, else `ERF_INV_LARGE` and
``w' = sqrt(w) - 3`` (Horner's scheme, highest power first); ``+-1`` give ``+-inf``.

>>> len(ERF_INV_SMALL), len(ERF_INV_LARGE)
(9, 9)
"""

ERF_INV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                 -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERF_INV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                 -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
