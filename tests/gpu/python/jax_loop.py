"""JAX on the GPU: a jitted function called CALLS times; prints a JSON line.
XLA loads CUDA with dlopen: the launcher is not told."""
import json
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

CALLS = 10


@jax.jit
def f(x):
    return jnp.tanh(x @ x.T).sum()


def main():
    x = jnp.ones((256, 256), dtype=jnp.float32)
    total = 0.0
    for _ in range(CALLS):
        total += float(f(x))
    print(json.dumps({"calls": CALLS, "total": total,
                      "backend": jax.default_backend()}))


if __name__ == "__main__":
    main()
