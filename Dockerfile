# ALTM image for docker-compose (workers and, later, the retrieval service).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY altm ./altm
RUN pip install --no-cache-dir .
ENV ALTM_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["altm"]
