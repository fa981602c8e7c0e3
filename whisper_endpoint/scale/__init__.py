"""Scale-out on Ray: Ray Serve replicas of the ``EndpointHandler`` (``serve_app``), and the cluster
connection the batch command's ``--ray`` mode shares (``cluster``)."""
