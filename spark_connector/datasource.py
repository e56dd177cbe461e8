"""OdradekDataSource: the PySpark Python Data Source, short name ``odradek`` (Spark reserves ``kafka``).

    spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", "events").load()

Options are parsed (and rejected with Spark's messages) when Spark asks for the schema, a reader or a
writer, i.e. when the query starts; see ``options.py``.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter, DataSourceWriter,
)
from pyspark.sql.types import StructType

from .options import lower_keys, parse_sink_options, parse_source_options
from .schema import spark_schema
from .typed_columns import TypedColumns, typed_columns

SHORT_NAME = "odradek"


class OdradekDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        opts = lower_keys(self.options)
        include = opts.get("includeheaders", "false").strip().lower() == "true"
        typed = self._typed(opts.get("subscribe"))
        return typed.source_schema(spark_schema(include)) if typed else spark_schema(include)

    def _typed(self, topics: str | None) -> TypedColumns | None:
        """Typed key/value columns (``typed_columns``); the default subjects need exactly one topic."""
        names = [t.strip() for t in (topics or "").split(",") if t.strip()]
        return typed_columns(self.options, names[0] if len(names) == 1 else None)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .batch_reader import KafkaBatchReader  # noqa: PLC0415 (keep the registration import light)
        return KafkaBatchReader(parse_source_options(self.options, streaming=False),
                                self._typed(lower_keys(self.options).get("subscribe")))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .stream_reader import KafkaStreamReader  # noqa: PLC0415
        return KafkaStreamReader(parse_source_options(self.options, streaming=True),
                                 self._typed(lower_keys(self.options).get("subscribe")))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .writer import KafkaBatchWriter, validate_sink_schema  # noqa: PLC0415
        if overwrite:
            raise ValueError("Save mode Overwrite not allowed for odradek. Allowed save modes are Append and "
                             "ErrorIfExists (default).")
        options = parse_sink_options(self.options)
        typed = self._typed(options.topic)
        validate_sink_schema(typed.sink_schema(schema) if typed else schema, options)
        return KafkaBatchWriter(options, typed)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .writer import KafkaStreamWriter, validate_sink_schema  # noqa: PLC0415
        options = parse_sink_options(self.options)
        typed = self._typed(options.topic)
        validate_sink_schema(typed.sink_schema(schema) if typed else schema, options)
        return KafkaStreamWriter(options, typed)  # type: ignore[return-value]
