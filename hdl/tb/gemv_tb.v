// Testbench for the generated GemvUnit (target/hdl/gemv.v, 8 lanes).
//
// Reads one line per clock from +vectors=<file>:
//   q_we q_addr q_data start d c k_valid k0 k1 k2 k3 k4 k5 k6 k7  (hex)
// applies it, gives one rising edge, and after the edge writes each
// logit to +out=<file> as "<clock> <logit>" (decimal clock, hex i32
// bits), the sampling point of hdl::sim::tick. tests/verilog_cosim.rs
// compares it with attention::engine::logit.
`timescale 1ns / 1ps
module gemv_tb;
    reg clock = 1'b0;
    reg q_we = 1'b0;
    reg [7:0] q_addr = 8'd0;
    reg [31:0] q_data = 32'd0;
    reg start = 1'b0;
    reg [8:0] d = 9'd0;
    reg [31:0] c = 32'd0;
    reg k_valid = 1'b0;
    reg [15:0] k0 = 16'd0, k1 = 16'd0, k2 = 16'd0, k3 = 16'd0;
    reg [15:0] k4 = 16'd0, k5 = 16'd0, k6 = 16'd0, k7 = 16'd0;
    wire out_valid;
    wire [31:0] out_logit;

    gemv dut (
        .clock(clock), .q_we(q_we), .q_addr(q_addr), .q_data(q_data),
        .start(start), .d(d), .c(c), .k_valid(k_valid),
        .k_data$0(k0), .k_data$1(k1), .k_data$2(k2), .k_data$3(k3),
        .k_data$4(k4), .k_data$5(k5), .k_data$6(k6), .k_data$7(k7),
        .out_valid(out_valid), .out_logit(out_logit)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                    q_we, q_addr, q_data, start, d, c, k_valid, k0, k1, k2, k3, k4, k5, k6, k7);
        while (n == 15) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "%0d %h\n", t, out_logit);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                        q_we, q_addr, q_data, start, d, c, k_valid, k0, k1, k2, k3, k4, k5, k6, k7);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
