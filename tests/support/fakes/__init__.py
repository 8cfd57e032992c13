"""One fake of each role the tests need in place of the world:

- `target.FakeTarget`: a load target (runner.target), with the abilities a test gives it;
- `prometheus.FakeProm`: the Prometheus HTTP API over samples a test or a simulation writes;
- `stack.SimulatedStack`: the local stack on a virtual clock (`clock.VirtualClock`), scraped
  into a FakeProm, what a FakeTarget's load goes to (the runner's tests);
- `pipeline.SimulatedPipeline`: a pipeline with a knee, what a capacity search's steps and runs
  give in closed form (the search's tests).
"""
