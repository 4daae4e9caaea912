"""`tprepro plan`: every job of a params file with its work, its estimated time per device kind and
its disk, from the stage declarations the DAG is built from and the committed speed measurements."""
