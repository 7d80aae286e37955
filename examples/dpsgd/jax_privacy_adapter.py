#!/usr/bin/env python3
"""dp-audit exec adapter for JAX Privacy: DP-SGD on a one-parameter linear model.

Every release is one training run of T steps of DP-SGD built from JAX Privacy's own parts, as
its API documentation and examples put them together:

  - batches: `batch_selection.CyclicPoissonSampling(sampling_prob=B/N, iterations=T)` (Poisson
    sampling, cycle_length 1), its `batch_iterator` padded with -1 to a fixed size;
  - per-example clipping: `clipped_grad(loss, l2_clip_norm=C)` summing the clipped gradients,
    padding examples passed as `is_padding_example`;
  - noise: `noise_addition.gaussian_privatizer(stddev=Z * grad_fn.sensitivity(ADD_OR_REMOVE_ONE),
    prng_key=...)` chained with `optax.sgd` (`optax.chain(privatizer, scale(1/B), sgd(lr))`);
  - accounting: `accounting.DpsgdTrainingAccountant(PldAccountantConfig())` with
    `DpParams(noise_multipliers=Z, num_samples=N, batch_size=B, delta=DELTA)`.

The model has one parameter θ (starting at 0) and the per-example loss θ·x, so a record's
gradient is the record itself: records in [-C, C] are the gradients the clipping bounds, and the
audit's record range is -C:C. Neighbors: one record added or removed (Poisson sampling's
relation; JAX Privacy's accountant uses ADD_OR_REMOVE_ONE).

The claim is read off the library's accountant, not computed here:

    python examples/dpsgd/jax_privacy_adapter.py --noise-multiplier 2 --steps 10 --print-claim
    python examples/dpsgd/jax_privacy_adapter.py --noise-multiplier 2 --steps 10 --write-ledger L
    audit run --exec 'python examples/dpsgd/jax_privacy_adapter.py --noise-multiplier 2 --steps 10' \
        --claim "$(python examples/dpsgd/jax_privacy_adapter.py ... --print-claim)" \
        --record-range -1:1 --transform checkpoints:1

`--print-claim` prints `approx:EPS:DELTA` with EPS the accountant's ε at δ rounded up to 8
significant digits; `--write-ledger FILE` writes the same run as a privacy ledger (seed 000: one
sampling event, one Gaussian sum) for `--claim ledger:FILE`, which dp-audit's own PLD accountant
then accounts.

Misconfiguration (`--noise-stddev multiplier`): the privatizer is given `stddev=Z`, the noise
multiplier itself (the docstring example's `gaussian_privatizer(stddev=1.0, ...)`), instead of
Z times the clipped gradient's sensitivity. With a clipping norm C ≠ 1 the noise is Z where the
accountant (told Z) assumed Z·C: at C = 2 the run has half the noise its claim was computed for.

Seeding: everything is seeded from the request. Batch selection takes a numpy Generator, built
here from the seed through numpy's SeedSequence (all 64 bits); the noise takes a JAX PRNG key,
built from two 32-bit words of the same SeedSequence and split into one key per release. So a
dp-audit run is reproducible from its --seed (and the same --exec-batch).

Speed: the releases of one request are trained together (`jax.vmap` over the runs, one `jax.jit`
compilation per request); the batch selection runs the library's numpy iterator once per run.

Protocol: one JSON request on stdin, {"dataset": [...], "samples": N, "seed": S}; N lines on
stdout: θ after every step (T numbers, `--release every`, the default) or the final θ only.
"""
import argparse
import decimal
import json
import sys


def round_up(x, digits=8):
    """x rounded up to `digits` significant digits, as text (a claim never below the library's)."""
    return str(decimal.Context(prec=digits, rounding=decimal.ROUND_CEILING).create_decimal(x))


def positive(name, value, integer=False):
    ok = value > 0 and value == value and value != float("inf")
    if not ok or (integer and int(value) != value):
        what = "a whole number ≥ 1" if integer else "a finite number > 0"
        sys.exit(f"{name} = {value}; allowed: {what}")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--noise-multiplier", type=float, required=True, help="Z (noise std / C)")
    ap.add_argument("--steps", type=int, default=10, help="T, DP-SGD steps per run (default 10)")
    ap.add_argument("--expected-batch-size", type=int, default=1,
                    help="B; sampling_prob = B/N (default 1)")
    ap.add_argument("--num-examples", type=int, default=4,
                    help="N given to the sampler's rate and the accountant (default 4: q = 1/4)")
    ap.add_argument("--clip-norm", type=float, default=1.0, help="C, l2_clip_norm (default 1)")
    ap.add_argument("--learning-rate", type=float, default=1.0, help="SGD step size (default 1)")
    ap.add_argument("--release", choices=["every", "final"], default="every",
                    help="release θ after every step (default) or the final θ only")
    ap.add_argument("--noise-stddev", choices=["sensitivity", "multiplier"],
                    default="sensitivity",
                    help="stddev given to the privatizer: Z·sensitivity (correct, default) or Z "
                         "(the misconfiguration)")
    ap.add_argument("--delta", type=float, default=1e-5, help="δ of --print-claim (default 1e-5)")
    ap.add_argument("--accountant", choices=["pld", "rdp"], default="pld",
                    help="JAX Privacy accountant config for --print-claim (default pld)")
    ap.add_argument("--print-claim", action="store_true",
                    help="print the accountant's claim approx:EPS:DELTA and exit")
    ap.add_argument("--write-ledger", metavar="FILE",
                    help="write the run's privacy ledger (seed 000 format) to FILE and exit")
    args = ap.parse_args()
    positive("--noise-multiplier", args.noise_multiplier)
    positive("--steps", args.steps, integer=True)
    positive("--expected-batch-size", args.expected_batch_size, integer=True)
    positive("--num-examples", args.num_examples, integer=True)
    positive("--clip-norm", args.clip_norm)
    positive("--learning-rate", args.learning_rate)
    if args.expected_batch_size > args.num_examples:
        sys.exit(f"--expected-batch-size = {args.expected_batch_size}; allowed: at most "
                 f"--num-examples = {args.num_examples} (sampling_prob = B/N ≤ 1)")
    if not 0 < args.delta < 1:
        sys.exit(f"--delta = {args.delta}; allowed: 0 < δ < 1")
    return args


def library_epsilon(args):
    """ε at δ from JAX Privacy's DP-SGD training accountant, for the run as configured."""
    from jax_privacy import accounting

    config = (accounting.PldAccountantConfig() if args.accountant == "pld"
              else accounting.RdpAccountantConfig())
    accountant = accounting.DpsgdTrainingAccountant(dp_accountant_config=config)
    params = accounting.DpParams(
        noise_multipliers=args.noise_multiplier,
        num_samples=args.num_examples,
        batch_size=args.expected_batch_size,
        delta=args.delta,
        sampling_method=accounting.SamplingMethod.POISSON,
    )
    return accountant.compute_epsilon(num_updates=args.steps, dp_params=params)


def write_ledger(args):
    q = args.expected_batch_size / args.num_examples
    with open(args.write_ledger, "w", encoding="utf-8") as f:
        f.write(json.dumps({"event": "sampling", "probability": q, "repetitions": args.steps,
                            "policy": "poisson"}) + "\n")
        f.write(json.dumps({"event": "gaussian-sum",
                            "noise_multiplier": args.noise_multiplier}) + "\n")


def train(args, records, n_runs, seed):
    """n_runs independent DP-SGD runs on `records`; returns an (n_runs, T) numpy array of θ."""
    import dp_accounting
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax_privacy import batch_selection, clipped_grad, noise_addition

    steps, n = args.steps, len(records)
    seq = np.random.SeedSequence(seed)
    batch_rng = np.random.default_rng(seq.spawn(1)[0])
    k0, k1 = (int(w) for w in seq.generate_state(2))
    noise_keys = jax.random.split(jax.random.fold_in(jax.random.key(k0), k1), n_runs)

    # Batches: the library's Poisson sampler, one iterator per run, padded with -1 to size n
    # (no batch can be larger), as split_and_pad_global_batch / pad_to_multiple_of do.
    sampler = batch_selection.CyclicPoissonSampling(
        sampling_prob=args.expected_batch_size / args.num_examples, iterations=steps)
    width = max(n, 1)
    indices = np.full((n_runs, steps, width), -1, dtype=np.int64)
    for r in range(n_runs):
        for t, batch in enumerate(sampler.batch_iterator(n, rng=batch_rng)):
            indices[r, t, : len(batch)] = batch
    padding = indices < 0
    # Padding examples are a dummy record (0, not derived from the data), zeroed by clipped_grad.
    table = np.append(np.asarray(records, dtype=np.float32), np.float32(0.0))
    batches = table[np.where(padding, n, indices)]

    def loss(theta, x):
        return jnp.sum(theta * x)  # per-example gradient: the record x

    grad_fn = clipped_grad(loss, l2_clip_norm=args.clip_norm, batch_argnums=1)
    if args.noise_stddev == "sensitivity":
        stddev = args.noise_multiplier * grad_fn.sensitivity(
            dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    else:
        stddev = args.noise_multiplier  # the misconfiguration: C left out

    def one_run(key, run_batches, run_padding):
        privatizer = noise_addition.gaussian_privatizer(stddev=stddev, prng_key=key)
        optimizer = optax.chain(privatizer, optax.scale(1.0 / args.expected_batch_size),
                                optax.sgd(args.learning_rate))
        theta = jnp.zeros((), dtype=jnp.float32)
        state = optimizer.init(theta)

        def step(carry, batch):
            theta, state = carry
            x, pad = batch
            grads = grad_fn(theta, x, is_padding_example=pad)
            updates, state = optimizer.update(grads, state, theta)
            theta = optax.apply_updates(theta, updates)
            return (theta, state), theta

        _, thetas = jax.lax.scan(step, (theta, state), (run_batches, run_padding))
        return thetas

    run_all = jax.jit(jax.vmap(one_run))
    return np.asarray(run_all(noise_keys, jnp.asarray(batches), jnp.asarray(padding)))


def main():
    args = parse_args()
    try:
        import jax  # noqa: F401
        import jax_privacy  # noqa: F401
    except ImportError as e:
        sys.exit(f"cannot import jax_privacy ({e}); install: examples/dpsgd/setup.sh")
    if args.print_claim:
        eps = library_epsilon(args)
        print(f"approx:{round_up(eps)}:{args.delta!r}")
        return
    if args.write_ledger:
        write_ledger(args)
        return

    req = json.load(sys.stdin)
    records = []
    for rec in req["dataset"]:
        value = rec[0] if isinstance(rec, list) and len(rec) == 1 else rec
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            sys.exit(f"record {rec!r}: allowed: a number (the model has one parameter)")
        records.append(float(value))
    n_runs = int(req["samples"])
    thetas = train(args, records, n_runs, int(req["seed"]))
    out = []
    if args.release == "every":
        for row in thetas:
            out.append(" ".join(repr(float(v)) for v in row))
    else:
        for row in thetas:
            out.append(repr(float(row[-1])))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
