"""What the benchmarks share, one job per module:

- `sample`: the real Mathematics sample (the real generator through the project's data stage, cached);
- `runner`: a training run set up as every training is (tprepro.training), its metrics recorded by one callback
  (`Recorder`); `preset_run` for a preset at the sizes a benchmark tries;
- `overrides`: a benchmark's changes to the params file's train settings and the model sizes it tries;
- `report`: the stamp of a measurement (commit, device, date, torch), its JSON and a markdown table;
- `stats`: the mean, sd and 95% t interval, paired over seeds;
- `measure_jobs`: the options naming the measurement a job-timing benchmark writes, one job timed, its bytes;
- `fit`: the least squares of a job's seconds or bytes as a fixed part + a rate x its size;
- `setups`: each experiment's training set-up (its data, codec, model and train settings), built from the
  experiment's own code.
"""
