"""The brokers' Admin API (kafka-python): what each broker reports of its configs, topics and quotas, for
`apply --verify`. An adapter: the judging is `reconciler.verify`."""
