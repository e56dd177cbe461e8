# Odradek broker image: python:3.12-slim-bookworm, the package with uvloop and the native codecs (cramjam, crc32c
# wheels), a non-root user, the data volume, an entrypoint mapping KAFKA_CFG_* / KAFKA_* to server.properties.
# The base is pinned to Debian 12 (bookworm): the apt packages below are named for it (Debian 13 has no
# openjdk-17); tests/integration/test_docker_packaging.py checks each exists in the pinned release.
#
#   docker build -t odradek .                      # the broker image (target "broker", the default)
#   docker build --target spark-job -t odradek-spark .   # + Java 17 and pyspark, runs examples/
#
# Stage 1 builds our wheel only (with gcc for the compiled record codec); the dependencies come as binary
# wheels from PyPI in stage 2.
FROM python:3.12-slim-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY broker ./broker
COPY controller ./controller
COPY clients ./clients
COPY tools ./tools
COPY spark_connector ./spark_connector
COPY pyspark_odradek ./pyspark_odradek
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.12-slim-bookworm AS broker
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ODRADEK_CONFIG_FILE=/opt/odradek/config/server.properties
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/odradek-*.whl \
    && rm -rf /tmp/wheels \
    && python -c "import uvloop, cramjam, crc32c, odradek.broker.server, odradek.protocol.records._codec"
RUN groupadd --system --gid 1001 odradek \
    && useradd --system --uid 1001 --gid odradek --home-dir /var/lib/odradek --shell /usr/sbin/nologin odradek \
    && mkdir -p /var/lib/odradek/data /var/lib/odradek/logs /var/lib/odradek/secrets /opt/odradek/config /opt/odradek/bin \
    && chown -R odradek:odradek /var/lib/odradek /opt/odradek/config
COPY docker/entrypoint.py docker/healthcheck.py docker/secure_init.py /opt/odradek/bin/
USER odradek
WORKDIR /var/lib/odradek
VOLUME ["/var/lib/odradek/data"]
# 9092: the default PLAINTEXT listener; 7071: Prometheus /metrics (odradek.metrics.port)
EXPOSE 9092 7071
# docker stop sends SIGTERM to PID 1, which is the broker itself (the entrypoint execs it): controlled shutdown
STOPSIGNAL SIGTERM
# ApiVersions to the first listener, with the Python already in the image (no nc, no Kafka CLI)
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=10 \
    CMD ["python", "/opt/odradek/bin/healthcheck.py"]
ENTRYPOINT ["python", "/opt/odradek/bin/entrypoint.py"]
CMD ["odradek-server"]

# The optional Spark job of docker-compose.yml (profile "spark"): the example pipeline against the cluster.
FROM broker AS spark-job
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir "$(ls /tmp/wheels/odradek-*.whl)[spark]" && rm -rf /tmp/wheels
COPY examples /opt/odradek/examples
RUN mkdir -p /var/lib/odradek/spark && chown odradek:odradek /var/lib/odradek/spark
USER odradek
ENTRYPOINT []
CMD ["python", "/opt/odradek/examples/spark_pipeline.py", "--bootstrap-servers", "kafka-1:9092,kafka-2:9092,kafka-3:9092", "--work-dir", "/var/lib/odradek/spark"]

# The default target: the broker image.
FROM broker
