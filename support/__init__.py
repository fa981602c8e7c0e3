"""What the tests, the benchmarks, the evaluations and the tooling share, and nothing else.

``tests``, ``bench``, ``evaluation`` and ``scripts`` import from here and never from each other
(``lint-imports`` checks it): the repository's audio and its readers (``paths``, ``audio``), real
servers on loopback (``serving``, ``postgres``), the hostile-input corpus (``bad_inputs``), the
non-speech corpus (``nonspeech``), the browser (``browser``), the field's metrics (``metrics``), timing
and memory (``measure``), results files with their provenance (``results``) and the benchmark's tables
and plot (``bench_report``, ``bench_plot``). The product (``whisper_endpoint``) imports none of it.
"""
