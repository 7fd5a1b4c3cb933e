// How a desktop app would drive rill: generation runs on a worker thread and streams into the UI's
// text box, while the UI thread stays free to react to a Cancel button.
//
//   desktop MODEL.gguf
//
// There is no real UI here: the "text box" is a string behind a mutex, and the main thread presses
// Cancel itself once a few pieces have arrived.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <rill.hpp>

namespace {

// Stands in for a widget the worker thread appends to and the UI thread reads.
class TextBox {
public:
    void append(std::string_view piece) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            text_ += piece;
            ++pieces_;
        }
        changed_.notify_all();
    }

    // Blocks until at least `n` pieces arrived or `finished()` was called.
    void wait_for_pieces(int n) {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return pieces_ >= n || finished_; });
    }

    void finished() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            finished_ = true;
        }
        changed_.notify_all();
    }

    std::string text() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return text_;
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string text_;
    int pieces_ = 0;
    bool finished_ = false;
};

const char* finish_name(rill_finish_reason reason) {
    switch (reason) {
        case RILL_FINISH_STOP: return "stop";
        case RILL_FINISH_LENGTH: return "length";
        case RILL_FINISH_CANCELLED: return "cancelled";
    }
    return "?";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    try {
        rill::api::Model model(argv[1]);
        rill::api::Session session(model);
        const std::string prompt = model.apply_chat_template({{"user", "Tell me a story about a brave little dog."}});

        rill_generate_params params = rill_generate_default_params();
        params.temperature = 0.0f;
        params.max_tokens = 200;

        TextBox box;
        rill_generate_result result{};
        std::exception_ptr worker_error;
        std::thread worker([&] {
            try {
                result = session.generate(prompt, params, [&](std::string_view piece) {
                    box.append(piece);
                    std::fwrite(piece.data(), 1, piece.size(), stdout);
                    std::fflush(stdout);
                    // A real UI repaints per piece; the pause also keeps a tiny model from finishing
                    // all 200 tokens before the UI thread gets to press Cancel.
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                    return true;
                });
            } catch (...) {
                worker_error = std::current_exception();  // an exception may not leave a std::thread
            }
            box.finished();  // wake the UI thread even if fewer than three pieces ever come
        });

        box.wait_for_pieces(3);
        session.cancel();  // the user pressed Cancel; safe while the worker is generating
        worker.join();
        std::printf("\n");
        if (worker_error) std::rethrow_exception(worker_error);

        std::printf("finish: %s, %d tokens generated, %zu bytes in the text box\n", finish_name(result.finish_reason),
                    result.generated_tokens, box.text().size());
        if (result.finish_reason != RILL_FINISH_CANCELLED)
            std::printf("(the model finished before Cancel was pressed)\n");
        return 0;
    } catch (const rill::api::Error& e) {
        std::fprintf(stderr, "error: %s: %s\n", rill_status_string(e.status()), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
